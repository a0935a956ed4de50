"""The agent's durable outbox: everything sent upstream, until the cloud has checkpointed it.

Store-and-forward for links that drop. Each batch bound for the cloud gets
the next sequence number and is written (synced) to RocksDB before it may
leave; the uplink sends from the outbox and deletes a batch only when the
cloud reports that a checkpoint covering its sequence number completed. A
cut link means delay, never loss; a restart resends what was not confirmed,
and the cloud drops sequence numbers it has already taken.

The outbox has a byte budget. ``over_budget()`` tells the agent to throttle
its edge sources and stop acknowledging MQTT, so that the broker keeps the
backlog instead of the gateway's disk.

Sequence numbers only grow but need not be consecutive: an edge domain
numbers a batch after the checkpoint that produced it, so publishing it again
after a restore is recognised and ignored.

Not thread-safe: one owner (the edge stream manager's uplink).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from rocksdict import Options, Rdict, WriteOptions

_SEQ = struct.Struct(">Q")
_META = b"m:confirmed"  # batches live under b"d" + sequence, so iteration never meets it


def _key(seq: int) -> bytes:
    return b"d" + _SEQ.pack(seq)


def _seq(key: bytes) -> int:
    return int(_SEQ.unpack_from(key, 1)[0])


class Outbox:
    """Sequence-numbered batches awaiting the cloud's confirmation."""

    def __init__(self, path: str | Path, budget_bytes: int) -> None:
        if budget_bytes <= 0:
            raise ValueError(f"outbox budget must be positive, got {budget_bytes}")
        Path(path).mkdir(parents=True, exist_ok=True)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        self._db = Rdict(str(path), opts)
        self._sync = WriteOptions()
        self._sync.sync = True
        self.budget = budget_bytes
        raw = self._db.get(_META)
        self.confirmed = _SEQ.unpack(raw)[0] if isinstance(raw, bytes) else 0
        self.nbytes = 0
        self.count = 0
        last = self.confirmed
        for key, value in self._db.items(from_key=_key(self.confirmed + 1)):
            assert isinstance(key, bytes) and isinstance(value, bytes)
            if not key.startswith(b"d"):
                break
            last = _seq(key)
            self.nbytes += len(value)
            self.count += 1
        self.next_seq = last + 1

    def put(self, batch: bytes, seq: int = 0) -> int:
        """Store ``batch`` durably under ``seq`` (0: the next number); return its number.

        Numbers only grow: a ``seq`` at or below one already stored (or
        confirmed) is a republication of the same batch, and is ignored
        (returns 0).
        """
        if seq == 0:
            seq = self.next_seq
        elif seq < self.next_seq:
            return 0
        self._db.put(_key(seq), batch, self._sync)
        self.next_seq = seq + 1
        self.nbytes += len(batch)
        self.count += 1
        return seq

    def over_budget(self) -> bool:
        return self.nbytes >= self.budget

    def pending(self, after: int = 0) -> Iterator[tuple[int, bytes]]:
        """Unconfirmed batches with sequence numbers above ``after``, in order."""
        start = max(after, self.confirmed) + 1
        if start >= self.next_seq:
            return
        for key, value in self._db.items(from_key=_key(start)):
            assert isinstance(key, bytes) and isinstance(value, bytes)
            if not key.startswith(b"d"):
                return
            yield _seq(key), value

    def confirm(self, up_to: int) -> int:
        """The cloud checkpointed everything up to ``up_to``: delete it; return bytes freed."""
        if up_to <= self.confirmed:
            return 0
        up_to = min(up_to, self.next_seq - 1)
        freed = 0
        for key, value in self._db.items(from_key=_key(self.confirmed + 1)):
            assert isinstance(key, bytes) and isinstance(value, bytes)
            if not key.startswith(b"d") or _seq(key) > up_to:
                break
            freed += len(value)
            self.count -= 1
        self._db.delete_range(_key(self.confirmed + 1), _key(up_to + 1))
        self._db.put(_META, _SEQ.pack(up_to), self._sync)
        self.confirmed = up_to
        self.nbytes -= freed
        return freed

    @property
    def backlog(self) -> int:
        """Unconfirmed batches (the agent reports it to the master)."""
        return self.count

    def close(self) -> None:
        self._db.close()
