"""Groupings as the runtime uses them: the pure logic lives in ``plan/_routing.py``, below
the runtime, so that the in-process test kit (``headwater.testing``) routes the same way."""

from ..plan._routing import Router, Selector, key_hash, make_selector

__all__ = ["Router", "Selector", "key_hash", "make_selector"]
