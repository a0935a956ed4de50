"""``heronpy.streamlet.impl.contextimpl``."""

from .._operators import StreamletContext as ContextImpl

__all__ = ["ContextImpl"]
