"""Frames a stream manager holds back: for instances not connected yet, for peers not
known yet, and, during a live edit, for the successor of a retiring task.

A live edit switches at a checkpoint: a retiring task still takes what each
source sent before that checkpoint's marker, and what a source sends after
its marker waits here until the task's successor connects (``_stmgr.py``
delivers it on hello). Used from the stmgr's event loop only.
"""

from __future__ import annotations

from ..wire import Kind
from ..wire._frame import frame_checkpoint, frame_src


def peer_slot(container: int) -> int:
    """The waiting slot of frames for a peer whose address is not known yet."""
    return -1000 - container


class Staging:
    """Waiting frames per task (or peer slot), and the retiring tasks of a staged edit.

    ``retiring`` (task -> (switch checkpoint, sources whose marker has passed))
    is only ever mutated in place: the stmgr keeps a reference to it for its
    routing hot path.
    """

    def __init__(self) -> None:
        self.retiring: dict[int, tuple[int, set[int]]] = {}
        self.frames: dict[int, list[bytes]] = {}
        self.nbytes: dict[int, int] = {}

    # -- waiting frames ------------------------------------------------------------
    def park(self, slot: int, frame: bytes) -> int:
        """Keep ``frame`` for ``slot``; the bytes now waiting there."""
        self.frames.setdefault(slot, []).append(frame)
        size = self.nbytes[slot] = self.nbytes.get(slot, 0) + len(frame)
        return size

    def take(self, slot: int) -> list[bytes]:
        """What waits for ``slot`` (a task that connected, a peer now known), in order."""
        self.nbytes.pop(slot, None)
        return self.frames.pop(slot, [])

    def forget_removed(self, local_tasks: set[int]) -> list[int]:
        """A new plan: drop what waits for tasks this container no longer has (a removed
        task: nothing after its barrier is its); returns those tasks."""
        removed = [slot for slot in self.frames if slot >= 0 and slot not in local_tasks]
        for slot in removed:
            del self.frames[slot]
            self.nbytes.pop(slot, None)
        return removed

    def total_bytes(self) -> int:
        return sum(self.nbytes.values())

    def clear(self) -> None:
        """A rollback: nothing of the previous epoch is delivered."""
        self.frames.clear()
        self.nbytes.clear()
        self.retiring.clear()

    # -- a staged edit -------------------------------------------------------------
    def stage(self, retiring: set[int], at: int) -> None:
        """Hold back, for each task of ``retiring``, what comes after checkpoint ``at``."""
        self.retiring.clear()
        self.retiring.update({task: (at, set()) for task in retiring})

    def unstage(self) -> None:
        self.retiring.clear()

    def hold(self, task: int, frame: bytes) -> bool:
        """True when ``frame`` for retiring ``task`` comes after the switch barrier: it
        is kept for the successor."""
        at, passed = self.retiring[task]
        src = frame_src(frame)
        if src in passed:
            self.park(task, frame)
            return True
        if frame[0] == Kind.MARKER and frame_checkpoint(frame) == at:
            passed.add(src)
        return False
