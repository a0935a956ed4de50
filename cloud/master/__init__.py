"""The master daemon (``headwater master``): every topology's master, the scheduler,
the package store, the node registry and the REST API."""

from ._master import Master

__all__ = ["Master"]
