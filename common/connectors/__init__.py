"""Sources and sinks: the durable-log spout and transactional sinks."""

from ._files import TransactionalFileSink
from ._kv import KeyValueSink, read_key_value_sink
from ._log_spout import LogSpout

__all__ = ["KeyValueSink", "LogSpout", "TransactionalFileSink", "read_key_value_sink"]
