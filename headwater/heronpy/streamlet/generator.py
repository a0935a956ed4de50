"""``heronpy.streamlet.generator``."""

from ._operators import Generator

__all__ = ["Generator"]
