"""``heronpy.streamlet.runner``."""

from ._impl import Runner

__all__ = ["Runner"]
