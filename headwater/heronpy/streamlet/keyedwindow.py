"""``heronpy.streamlet.keyedwindow``."""

from ._impl import KeyedWindow

__all__ = ["KeyedWindow"]
