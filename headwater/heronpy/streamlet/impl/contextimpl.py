"""``heronpy.streamlet.impl.contextimpl``."""

from .._impl import StreamletContext as ContextImpl

__all__ = ["ContextImpl"]
