"""A task's state: what its component keeps, restored at start and snapshot at checkpoints.

A snapshot is incremental (``SnapshotLog``): the keys changed since a
checkpoint the store has folded (``committed``).
"""

from __future__ import annotations

from ..state import KeyedState, State
from ..state._state import SnapshotLog, load_snapshot


class TaskState:
    """The component's ``State`` and named ``KeyedState``s, and what its snapshots carry."""

    def __init__(self) -> None:
        self.state = State()
        self.keyed: dict[str, KeyedState] = {}
        self.restored_from = 0
        self.log = SnapshotLog()

    def restore(self, checkpoint: int, blob: bytes | None) -> None:
        self.restored_from = checkpoint
        if blob is not None:
            self.state, self.keyed, _ = load_snapshot(blob)

    def dump(self, checkpoint: int) -> bytes:
        return self.log.dump(checkpoint, self.state, self.keyed)

    def committed(self, checkpoint: int) -> None:
        """Later snapshots may build on ``checkpoint``."""
        self.log.committed(checkpoint)
