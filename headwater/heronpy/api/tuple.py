"""heronpy's tuple names. Runtime tuples are ``headwater.Tuple`` (same field names)."""

from __future__ import annotations

from headwater.common.api import TICK_COMPONENT, TICK_STREAM, Tuple

HeronTuple = Tuple

__all__ = ["HeronTuple", "Tuple", "TupleHelper"]


class TupleHelper:
    TICK_TUPLE_ID = TICK_STREAM
    TICK_SOURCE_COMPONENT = TICK_COMPONENT
