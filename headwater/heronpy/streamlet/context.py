"""``heronpy.streamlet.context``."""

from ._operators import StreamletContext as Context

__all__ = ["Context"]
