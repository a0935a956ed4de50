"""heronpy's ``State`` and ``HashMapState``: Headwater's checkpointed ``State``."""

from __future__ import annotations

from headwater.common.api._state import State

HashMapState = State

__all__ = ["HashMapState", "State"]
