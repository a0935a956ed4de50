"""``heronpy.streamlet.config``."""

from ._impl import Config

__all__ = ["Config"]
