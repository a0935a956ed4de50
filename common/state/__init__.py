"""Checkpointed state, the checkpoint store and the durable log.

``CheckpointStore`` and ``DurableLog`` load RocksDB; they are imported on
first use, so that instance processes, which need only ``State``, stay small.
"""

from typing import TYPE_CHECKING, Any

from ._state import KeyedState, State, StatefulComponent

if TYPE_CHECKING:
    from ._log import DurableLog, LogOffsetError
    from ._store import CheckpointStore, CorruptCheckpointError

__all__ = [
    "CheckpointStore",
    "CorruptCheckpointError",
    "DurableLog",
    "KeyedState",
    "LogOffsetError",
    "State",
    "StatefulComponent",
]


def __getattr__(name: str) -> Any:
    if name in ("DurableLog", "LogOffsetError"):
        from . import _log

        return getattr(_log, name)
    if name in ("CheckpointStore", "CorruptCheckpointError"):
        from . import _store

        return getattr(_store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
