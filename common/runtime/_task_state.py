"""A task's state: what its component keeps, restored at start and snapshot at checkpoints.

A snapshot is incremental (``SnapshotLog``): the keys changed since a
checkpoint the store has folded (``committed``).
"""

from __future__ import annotations

from ..api._state import UntrackedKeyedState
from ..state import KeyedState, State
from ..state._state import SnapshotLog, load_snapshot


class TaskState:
    """The component's ``State`` and named ``KeyedState``s, and what its snapshots carry.
    ``tracked``: whether a snapshot may be taken (an exactly-once topology); a task that never
    takes one keeps its keyed state without noting changed keys (``UntrackedKeyedState``)."""

    def __init__(self, tracked: bool = True) -> None:
        self.state = State()
        self.keyed: dict[str, KeyedState] = {}
        self.tracked = tracked
        self.restored_from = 0
        self.log = SnapshotLog()

    def keyed_state(self, name: str) -> KeyedState:
        """The keyed state called ``name``, made empty the first time."""
        keyed = self.keyed.get(name)
        if keyed is None:
            keyed = self.keyed[name] = KeyedState() if self.tracked else UntrackedKeyedState()
        return keyed

    def restore(self, checkpoint: int, blob: bytes | None) -> None:
        self.restored_from = checkpoint
        if blob is not None:
            self.state, self.keyed, _ = load_snapshot(blob)

    def dump(self, checkpoint: int) -> bytes:
        return self.log.dump(checkpoint, self.state, self.keyed)

    def committed(self, checkpoint: int) -> None:
        """Later snapshots may build on ``checkpoint``."""
        self.log.committed(checkpoint)
