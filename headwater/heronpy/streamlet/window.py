"""``heronpy.streamlet.window``."""

from ._windows import Window

__all__ = ["Window"]
