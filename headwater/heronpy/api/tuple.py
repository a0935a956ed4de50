"""heronpy's tuple names. Runtime tuples are ``headwater.Tuple`` (same field names)."""

from __future__ import annotations

from headwater.common.api import TICK_COMPONENT, TICK_STREAM
from headwater.common.api import Tuple as Tuple

HeronTuple = Tuple


class TupleHelper:
    TICK_TUPLE_ID = TICK_STREAM
    TICK_SOURCE_COMPONENT = TICK_COMPONENT
