"""``heronpy.streamlet.windowconfig``."""

from ._impl import WindowConfig

__all__ = ["WindowConfig"]
