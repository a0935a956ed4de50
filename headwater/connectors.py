"""Sources and sinks for topologies: the durable-log spout, the transactional file and
key-value sinks, the Parquet landing zone, their readers, and a tap (counts what it
sees).

>>> from headwater.connectors import TransactionalFileSink
>>> from functools import partial
>>> sink = partial(TransactionalFileSink, "out/counts")  # a bolt factory, as add_bolt takes

Exactly once: each sink commits what a checkpoint covered when that checkpoint completes
(``headwater read PATH`` prints any of them).
"""

from headwater.common.connectors import (
    KeyValueSink,
    LandingSink,
    LogSpout,
    Tap,
    TransactionalFileSink,
    manifests,
    read_key_value_sink,
    read_landing,
)

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
