"""``heronpy.streamlet.generator``."""

from ._impl import Generator

__all__ = ["Generator"]
