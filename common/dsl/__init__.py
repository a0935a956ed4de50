"""The functional DSL over the runtime: pipelines of named steps, fused where they can be."""

from ._keyed_ops import KeyedFlatMapOp
from ._ops import Op
from ._partition import partition_of
from ._pipeline import Pipeline
from ._sources import CollectionSpout
from ._streamlet import Streamlet, WindowedStreamlet
from ._window_ops import KeyClockWindowBolt
from ._windows import Session, Sliding, Tumbling

__all__ = [
    "CollectionSpout",
    "KeyClockWindowBolt",
    "KeyedFlatMapOp",
    "Op",
    "Pipeline",
    "Session",
    "Sliding",
    "Streamlet",
    "Tumbling",
    "WindowedStreamlet",
    "partition_of",
]
