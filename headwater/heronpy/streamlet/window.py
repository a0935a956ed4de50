"""``heronpy.streamlet.window``."""

from ._impl import Window

__all__ = ["Window"]
