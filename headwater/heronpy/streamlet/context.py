"""``heronpy.streamlet.context``."""

from ._impl import StreamletContext as Context

__all__ = ["Context"]
