"""``heronpy.streamlet.config``."""

from ._api import Config

__all__ = ["Config"]
