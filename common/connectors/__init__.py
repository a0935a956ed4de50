"""Sources and sinks: the durable-log spout, transactional sinks, the landing zone, and a tap."""

from ._files import TransactionalFileSink
from ._kv import KeyValueSink, read_key_value_sink
from ._landing import LandingSink
from ._landing_read import manifests, read_landing
from ._log_spout import LogSpout
from ._tap import Tap

__all__ = [
    "KeyValueSink",
    "LandingSink",
    "LogSpout",
    "Tap",
    "TransactionalFileSink",
    "manifests",
    "read_key_value_sink",
    "read_landing",
]
