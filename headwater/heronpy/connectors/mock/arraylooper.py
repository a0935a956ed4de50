"""``heronpy.connectors.mock.arraylooper``."""

from headwater.heronpy.streamlet._operators import ArrayLooper

__all__ = ["ArrayLooper"]
