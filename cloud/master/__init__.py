"""The master daemon (``headwater master``): every topology's master, the scheduler,
the package store, the node registry and the REST API."""

from ._enrolment import join_token_on_host
from ._master import Master

__all__ = ["Master", "join_token_on_host"]
