"""``heronpy.streamlet.keyedwindow``."""

from ._windows import KeyedWindow

__all__ = ["KeyedWindow"]
