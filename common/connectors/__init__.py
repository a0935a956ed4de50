"""Sources and sinks: the durable-log spout and transactional sinks."""

from ._files import TransactionalFileSink
from ._kv import KeyValueSink
from ._log_spout import LogSpout

__all__ = ["KeyValueSink", "LogSpout", "TransactionalFileSink"]
