"""``heronpy.streamlet.streamlet``."""

from ._impl import Streamlet

__all__ = ["Streamlet"]
