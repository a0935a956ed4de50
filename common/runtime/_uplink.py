"""The two ends of the uplink inside instances: the edge outbox sink and the cloud receiver.

An agent's edge subgraph and the cloud are separate checkpoint domains,
joined exactly-once by the durable outbox and sequence numbers:

- ``OutboxSink`` (edge) takes what a boundary component emits for the cloud.
  At each edge checkpoint it seals the rows since the last one into its
  checkpointed state; when the checkpoint completes it publishes them to its
  stream manager's outbox in chunks numbered ``checkpoint << 20 | chunk``.
  A restore publishes again what the restored state holds: the outbox keys
  are those sequence numbers, so a second publication is a no-op, and a
  checkpoint that never completed is never published.
- ``UplinkSpout`` (cloud) stands in for the boundary component in the cloud
  subgraph, under its name and with its streams, so the cloud components
  subscribe to it unchanged. The master hands it the agents' batches; it
  takes a batch only when its ``prev`` is the last sequence number it took
  from that agent (kept in its checkpointed state), drops replays, asks for
  a resend after a gap, and when a cloud checkpoint completes confirms to
  each agent what that checkpoint holds, so the agent deletes it.

Neither loads gRPC or RocksDB: the stream managers own the network and disk.
"""

from __future__ import annotations

import struct
import time
from collections import deque
from typing import Any, cast

from ..api import (
    DEAD_LETTERS,
    Bolt,
    Context,
    Reliability,
    RuntimeConfig,
    RuntimeContext,
    Spout,
    Tuple,
)
from ..wire import Kind, decode, encode, encode_frame
from ..wire._control import ControlMessage, UplinkBatch, UplinkFeedback
from ..wire._frame import STMGR

SEQ = struct.Struct("<q")
CHUNK_ROWS = 1000
CHUNK_BITS = 20
RESEND_AFTER_S = 5.0


def outbox_frame(task: int, component: str, seq: int, rows: list[Any]) -> bytes:
    """An OUTBOX frame: sequence number (0: let the outbox number it) and msgpack rows."""
    return encode_frame(Kind.OUTBOX, STMGR, task, len(rows), component.encode(),
                        SEQ.pack(seq) + encode(rows))  # fmt: skip


class OutboxSink(Bolt):
    """Edge side: seal per checkpoint, publish to the outbox when the checkpoint completes."""

    def __init__(self, component: str) -> None:
        self.component = component

    def open(self, ctx: Context) -> None:
        self.ctx = cast(RuntimeContext, ctx)
        self.rows: list[list[Any]] = []
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

    def on_checkpoint(self, checkpoint_id: int) -> None:
        if self.rows:
            self.sealed[checkpoint_id] = self.rows
            self.rows = []

    def on_commit(self, checkpoint_id: int) -> None:
        self._publish(checkpoint_id)

    def on_restore(self, checkpoint_id: int) -> None:
        self.rows = []
        for stale in [c for c in self.sealed if c > checkpoint_id]:
            del self.sealed[stale]  # cannot happen: a snapshot holds only what it sealed
        self._publish(checkpoint_id)  # the restored checkpoint is complete

    def _publish(self, up_to: int) -> None:
        for cp in sorted(c for c in self.sealed if c <= up_to):
            rows = self.sealed.pop(cp)
            for i in range(0, len(rows), CHUNK_ROWS):
                seq = (cp << CHUNK_BITS) | (i // CHUNK_ROWS + 1)
                frame = outbox_frame(self.ctx.task_id, self.component, seq,
                                     rows[i : i + CHUNK_ROWS])  # fmt: skip
                self.ctx.system_frame(frame)


class ReplayFilter:
    """The cloud receiver's bookkeeping: the last sequence number taken per agent.

    The receiver keeps ``last`` in its checkpointed state, so after a
    rollback it drops exactly the batches that the restored state holds.
    """

    def __init__(self, last: dict[str, int] | None = None) -> None:
        self.last: dict[str, int] = {} if last is None else last

    def check(self, agent: str, seq: int, prev: int) -> str:
        """``take`` the batch after the last one taken, or it is a ``replay`` or a ``gap``."""
        last = self.last.get(agent, 0)
        if seq <= last:
            return "replay"
        if prev != last:
            return "gap"
        return "take"

    def accept(self, agent: str, seq: int, prev: int | None = None) -> bool:
        """Take the batch if it follows the last one (``prev`` None: any later number)."""
        last = self.last.get(agent, 0)
        if self.check(agent, seq, last if prev is None else prev) != "take":
            return False
        self.last[agent] = seq
        return True


class UplinkSpout(Spout):
    """Cloud side: emits the agents' batches of one boundary component, each exactly once."""

    def __init__(self, component: str) -> None:
        self.component = component

    def open(self, ctx: Context) -> None:
        self.ctx = cast(RuntimeContext, ctx)
        self.inbox: deque[UplinkBatch] = deque()
        self.filter = ReplayFilter(ctx.state.setdefault("last", {}))  # agent -> seq taken
        self.last = self.filter.last
        self.at_checkpoint: dict[int, dict[str, int]] = {}
        rc = RuntimeConfig.from_mapping(ctx.config)
        # without checkpoints nothing will hold a batch later: confirm it once emitted
        self.confirm_at_once = rc.reliability is not Reliability.EXACTLY_ONCE
        self.asked: dict[str, tuple[int, float]] = {}  # agent -> (resend_after, when)
        # a fresh or restored receiver: every agent resends what follows its state
        self._feedback(agent="", resync=dict(self.last))

    def on_system(self, msg: ControlMessage) -> None:
        if isinstance(msg, UplinkBatch):
            self.inbox.append(msg)

    def next_tuple(self) -> None:
        if not self.inbox:
            return
        batch = self.inbox.popleft()
        agent, seq, prev = batch.agent, batch.seq, batch.prev
        verdict = self.filter.check(agent, seq, prev)
        if verdict == "replay":
            self.ctx.incr("uplink_replays_dropped")
            self._feedback(agent=agent, consumed=seq)
            return
        if verdict == "gap":
            last = self.last.get(agent, 0)
            self.ctx.incr("uplink_gaps")
            asked = self.asked.get(agent)
            now = time.monotonic()
            if asked is None or asked[0] != last or now - asked[1] > RESEND_AFTER_S:
                self.asked[agent] = (last, now)
                self._feedback(agent=agent, resend_after=last)
            return
        emit = self.ctx.emit
        rows = decode(batch.payload)
        for stream, values in rows:
            emit(values, stream=stream)
            if stream == DEAD_LETTERS:  # an edge domain's: listed under this /exceptions too
                self.ctx.report_dead_letter(values, f"agent {agent}")
        self.last[agent] = seq
        self.ctx.incr("uplink_batches")
        self.ctx.incr("uplink_rows", len(rows))
        self._feedback(agent=agent, consumed=seq, confirmed=seq if self.confirm_at_once else 0)

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self.at_checkpoint[checkpoint_id] = dict(self.last)

    def on_commit(self, checkpoint_id: int) -> None:
        held = self.at_checkpoint.get(checkpoint_id)
        for cp in [c for c in self.at_checkpoint if c <= checkpoint_id]:
            del self.at_checkpoint[cp]
        for agent, seq in (held or {}).items():
            self._feedback(agent=agent, confirmed=seq)

    def _feedback(
        self,
        *,
        agent: str,
        consumed: int = 0,
        confirmed: int = 0,
        resend_after: int = -1,
        resync: dict[str, int] | None = None,
    ) -> None:
        self.ctx.system(UplinkFeedback(self.component, agent, consumed, confirmed,
                                       resend_after, resync or {}))  # fmt: skip
