"""``heronpy.streamlet.builder``."""

from ._api import Builder

__all__ = ["Builder"]
