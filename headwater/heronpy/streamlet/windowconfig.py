"""``heronpy.streamlet.windowconfig``."""

from ._windows import WindowConfig

__all__ = ["WindowConfig"]
