"""The edge end of the uplink inside an instance: the outbox sink of a boundary component.

An agent's edge subgraph and the cloud are separate checkpoint domains,
joined exactly-once by the durable outbox and sequence numbers (the cloud
end is ``_receiver.py``). ``OutboxSink`` takes what a boundary component
emits for the cloud. At each edge checkpoint it seals the rows since the
last one into its checkpointed state; when the checkpoint completes it
publishes them to its stream manager's outbox in chunks numbered
``checkpoint << 20 | chunk``. A restore publishes again what the restored
state holds: the outbox keys are those sequence numbers, so a second
publication is a no-op, and a checkpoint that never completed is never
published.

It loads neither gRPC nor RocksDB: the edge stream manager owns the outbox
and the uplink (``headwater.edge._uplink``).
"""

from __future__ import annotations

import struct
from typing import Any

from ..api import Bolt, Context, Reliability, RuntimeConfig, RuntimeContext, Tuple
from ..wire import Kind, encode, encode_frame
from ..wire._frame import STMGR
from ._fence import FENCE_START

SEQ = struct.Struct("<q")
CHUNK_ROWS = 1000
CHUNK_BITS = 20


def outbox_frame(task: int, component: str, seq: int, rows: list[Any]) -> bytes:
    """An OUTBOX frame: sequence number (0: let the outbox number it) and msgpack rows."""
    return encode_frame(
        Kind.OUTBOX, STMGR, task, len(rows), component.encode(), SEQ.pack(seq) + encode(rows)
    )


class OutboxSink(Bolt):
    """Edge side: seal per checkpoint, publish to the outbox when the checkpoint completes."""

    def __init__(self, component: str) -> None:
        self.component = component

    def open(self, ctx: Context) -> None:
        if not isinstance(ctx, RuntimeContext):
            raise TypeError(f"{type(self).__name__} runs only inside the runtime's instances")
        self.ctx = ctx
        self.rows: list[list[Any]] = []
        self.fence: tuple[int, list[Any]] | None = None  # (checkpoint, row) to seal last
        rc = RuntimeConfig.from_mapping(ctx.config)
        self.exactly_once = rc.reliability is Reliability.EXACTLY_ONCE
        # checkpoint id -> rows sealed at it, not yet known to be in the outbox
        self.sealed: dict[int, list[list[Any]]] = ctx.state.setdefault("sealed", {})

    def process(self, tup: Tuple) -> None:
        self.rows.append([tup.stream, tup.values])
        if not self.exactly_once and len(self.rows) >= CHUNK_ROWS:
            self._flush_now()

    def on_tick(self, tup: Tuple) -> None:
        if not self.exactly_once and self.rows:
            self._flush_now()

    def _flush_now(self) -> None:
        # without checkpoints there is nothing to wait for: the outbox numbers it
        rows, self.rows = self.rows, []
        self.ctx.system_frame(outbox_frame(self.ctx.task_id, self.component, 0, rows))

    def seal_fence(self, at: int, row: list[Any]) -> None:
        """Seal ``row`` last at checkpoint ``at``, where it retires: a keyed move's fence
        after the last row read under the old placement (``_switch_fence.py``)."""
        self.fence = (at, row)

    def on_checkpoint(self, checkpoint_id: int) -> None:
        if self.fence is not None and self.fence[0] == checkpoint_id:
            self.rows.append(self.fence[1])
            self.fence = None
        if self.rows:
            self.sealed[checkpoint_id] = self.rows
            self.rows = []

    def on_commit(self, checkpoint_id: int) -> None:
        self._publish(checkpoint_id)

    def on_restore(self, checkpoint_id: int) -> None:
        self.rows = []
        fence = self.ctx.state.get(FENCE_START)
        if fence is not None:  # a move's fence, sealed before any row (``_switch_fence.py``)
            del self.ctx.state[FENCE_START]
            self.rows.append(fence)
        for stale in [c for c in self.sealed if c > checkpoint_id]:
            del self.sealed[stale]  # cannot happen: a snapshot holds only what it sealed
        self._publish(checkpoint_id)  # the restored checkpoint is complete

    def _publish(self, up_to: int) -> None:
        for cp in sorted(c for c in self.sealed if c <= up_to):
            rows = self.sealed.pop(cp)
            for i in range(0, len(rows), CHUNK_ROWS):
                seq = (cp << CHUNK_BITS) | (i // CHUNK_ROWS + 1)
                frame = outbox_frame(
                    self.ctx.task_id, self.component, seq, rows[i : i + CHUNK_ROWS]
                )
                self.ctx.system_frame(frame)
