"""A replayable source: reads a ``DurableLog`` by offset, offsets in checkpointed state."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, ClassVar

from ..api import Context, Spout, Stream, SystemContext
from ..state import DurableLog, LogOffsetError
from ..wire import decode
from ..wire._control import LogCommitted


class LogSpout(Spout):
    """Emits the records of a partitioned durable log, exactly once with checkpoints.

    ``path`` holds partitions ``p0``, ``p1``, ...; spout task ``i`` of ``n``
    reads the partitions whose number is ``i`` modulo ``n``. Each record is a
    msgpack-encoded list of values. The next offset of every partition lives
    in ``ctx.state``, so a restore seeks back to the last checkpoint. Set
    ``max_rate`` (records/s per task) to pace it. Subclass it to set
    ``outputs``, or pass them to ``Topology.add_spout``.

    Offsets a log no longer has: a reader that starts fresh (no offset in its
    state) starts at the oldest record left; a reader whose offset came from a
    checkpoint and was trimmed since skips to the oldest record with an error
    in its log and counts what it skipped (``log_records_skipped``), since
    those records were lost to it. An offset past the log's end raises
    ``LogOffsetError``: offsets never go back, so the log was deleted or
    replaced, and reading on would silently skip what follows.

    >>> from functools import partial
    >>> reader = partial(LogSpout, "/var/lib/headwater/log", partitions=2)
    """

    outputs: ClassVar[tuple[Stream | str, ...]] = ()
    READ_BATCH = 256
    REFRESH_S = 0.05
    """At most this often per partition, a reader at the end catches up with the writer
    (about 1 ms of CPU when the writer wrote since the last time; 25 µs to see that it
    did not: ``DurableLog.refresh``). While records come that bounds how long a new one
    waits (plus the idle spout's backoff: with 50 ms, 63 ms in all); an idle log is looked
    at as often as the runtime calls an idle spout (its backoff reaches 50 ms). A subclass
    may set it lower
    for latency: at 500 records/s, 0.01 took the median from the agent's ingest to the edge
    bolt after it from 47 to 17 ms, for about 30 % more of the agent's CPU
    (``bench/RESULTS.md``, "Edge to cloud")."""

    def __init__(self, path: str | os.PathLike[str], partitions: int, max_rate: float = 0) -> None:
        self.path = Path(path)
        self.partitions = partitions
        self.max_rate = max_rate

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        # the runtime's context reports committed offsets to the agent (retention)
        self._system = ctx if isinstance(ctx, SystemContext) else None
        n = len(ctx.component_tasks(ctx.component))
        self.mine = [p for p in range(self.partitions) if p % n == ctx.component_index]
        self.logs: dict[int, DurableLog] = {}
        self.offsets: dict[int, int] = ctx.state.setdefault("offsets", {})
        self._fresh = {p for p in self.mine if p not in self.offsets}  # no offset of its own
        for p in self.mine:
            self.offsets.setdefault(p, 0)
        self._turn = 0
        self._at_checkpoint: dict[int, dict[int, int]] = {}
        self._committed: dict[int, int] | None = None
        self._started = time.monotonic()
        self._sent = 0
        self._next_refresh: dict[int, float] = {}  # per partition: one never starves another

    def _log(self, p: int) -> DurableLog | None:
        log = self.logs.get(p)
        if log is None and (self.path / f"p{p}").exists():
            log = self.logs[p] = DurableLog(self.path / f"p{p}", reader=True)
        if log is None and self.offsets[p] > 0:
            gone = f"partition {p} of {self.path} is gone"
            raise LogOffsetError(
                f"{gone}, and this reader had read up to offset "
                f"{self.offsets[p]}: was the log deleted?"
            )
        return log

    def _behind(self, p: int, log: DurableLog) -> int:
        """The offset is below what the log still holds: start from what is left."""
        offset = self.offsets[p]
        if p in self._fresh:
            self.ctx.log.info("partition %d: starting at offset %d, the oldest left", p, log.start)
        else:
            self.ctx.log.error(
                "partition %d: offsets %d..%d were trimmed before this reader "
                "read them (lost to it); reading from %d",
                p,
                offset,
                log.start - 1,
                log.start,
            )
            incr = getattr(self.ctx, "incr", None)
            if callable(incr):
                incr("log_records_skipped", log.start - offset)
        self.offsets[p] = log.start
        return log.start

    def next_tuple(self) -> None:
        if not self.mine:
            return
        budget = self.READ_BATCH
        if self.max_rate:
            due = int((time.monotonic() - self._started) * self.max_rate) - self._sent
            budget = min(budget, due)
            if budget <= 0:
                return
        self._turn = (self._turn + 1) % len(self.mine)
        p = self.mine[self._turn]
        log = self._log(p)
        if log is None:
            return
        offset = self.offsets[p]
        if offset < log.start:
            offset = self._behind(p, log)
        if offset >= log.end:
            now = time.monotonic()
            if now < self._next_refresh.get(p, 0.0):
                return
            self._next_refresh[p] = now + self.REFRESH_S
            end = log.refresh()
            if offset > end:
                raise LogOffsetError(
                    f"partition {p} of {self.path}: this reader's offset "
                    f"{offset} is past the log's end {end}; offsets never go "
                    "back, so the log was deleted or replaced"
                )
            if offset < log.start:
                offset = self._behind(p, log)
            if offset >= end:
                return
        emit = self.ctx.emit
        records = log.read(offset, budget)
        self._fresh.discard(p)
        for record in records:
            emit(decode(record))
        self.offsets[p] = offset + len(records)
        self._sent += len(records)

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self._at_checkpoint[checkpoint_id] = dict(self.offsets)

    def on_commit(self, checkpoint_id: int) -> None:
        """Tell the runtime how far the checkpoint before this one read, for retention.

        One checkpoint of slack: a restore that falls back past a corrupt
        snapshot still finds its records.
        """
        offsets = self._at_checkpoint.pop(checkpoint_id, None)
        for old in [c for c in self._at_checkpoint if c < checkpoint_id]:
            del self._at_checkpoint[old]
        if self._committed is not None and self._system is not None:
            offsets_by_name = {str(p): o for p, o in self._committed.items()}
            self._system.system(LogCommitted(str(self.path.resolve()), offsets_by_name))
        if offsets is not None:
            self._committed = offsets

    def close(self) -> None:
        for log in self.logs.values():
            log.close()


def append_records(path: str | os.PathLike[str], partition: int, rows: list[list[Any]]) -> int:
    """Append rows to one partition of a log (a helper for producers and tests)."""
    from ..wire import encode

    log = DurableLog(Path(path) / f"p{partition}")
    try:
        return log.append([encode(r) for r in rows])
    finally:
        log.close()
