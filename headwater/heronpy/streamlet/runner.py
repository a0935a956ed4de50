"""``heronpy.streamlet.runner``."""

from ._api import Runner

__all__ = ["Runner"]
