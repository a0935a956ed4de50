"""Sources and sinks: the durable-log spout, transactional sinks and the landing zone."""

from ._files import TransactionalFileSink
from ._kv import KeyValueSink, read_key_value_sink
from ._landing import LandingSink
from ._landing_read import manifests, read_landing
from ._log_spout import LogSpout

__all__ = [
    "KeyValueSink",
    "LandingSink",
    "LogSpout",
    "TransactionalFileSink",
    "manifests",
    "read_key_value_sink",
    "read_landing",
]
