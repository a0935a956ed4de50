"""``heronpy.streamlet.builder``."""

from ._impl import Builder

__all__ = ["Builder"]
