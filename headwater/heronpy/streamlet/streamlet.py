"""``heronpy.streamlet.streamlet``."""

from ._api import Streamlet

__all__ = ["Streamlet"]
