"""``heronpy.connectors.mock.arraylooper``."""

from headwater.heronpy.streamlet._impl import ArrayLooper

__all__ = ["ArrayLooper"]
