"""Checkpointed state, the checkpoint store and the durable log."""

from ._log import DurableLog
from ._state import KeyedState, State, StatefulComponent
from ._store import CheckpointStore, CorruptCheckpointError

__all__ = [
    "CheckpointStore",
    "CorruptCheckpointError",
    "DurableLog",
    "KeyedState",
    "State",
    "StatefulComponent",
]
