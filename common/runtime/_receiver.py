"""The cloud end of the uplink inside an instance: the receiver of a boundary component.

``UplinkSpout`` stands in for an edge boundary component in the cloud
subgraph, under its name and with its streams, so the cloud components
subscribe to it unchanged. Its container's stream manager takes the agents'
batches on its ingress (``_ingress.py``) and hands each to it as an UPLINK
frame. It takes a batch only when its ``prev`` is the last sequence number
it took from that agent (``ReplayFilter``, kept in its checkpointed state),
drops replays, asks for a resend after a gap, and when a cloud checkpoint
completes confirms to each agent what that checkpoint holds, so the agent's
outbox deletes it. Its answers go to the stream manager as control messages
(``uplink_feedback``), which the ingress sends down the agent's stream.

A batch is an agent's bytes, so the receiver trusts none of it
(``split_batch``): a row that is not ``[stream, values]`` for a stream the
component declares, with as many values as that stream has fields, is
dead-lettered (and a batch that is not a list of rows, as one row); the batch
is still taken and confirmed, since resending it would not mend it. Nothing an
agent sends makes the receiver raise. A receiver whose rows a moved keyed component reads
also takes the agents' fence rows (``_fence.py``), each emitted, with its agent, to every
task of that component's cloud copy, in its place among the rows.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from ..api import (
    DEAD_LETTERS,
    Context,
    Reliability,
    RuntimeConfig,
    RuntimeContext,
    Spout,
)
from ..api._component import TopologyView
from ..api._config import HANDOVER
from ..plan._fence_streams import MOVE_PREFIX
from ..wire import DecodeError, decode
from ..wire._control import UplinkFeedback
from ._fence import FENCE_FIELDS, FENCE_OUT, FENCE_STREAM, fence_problem
from ._move_split import MoveSplit

RESEND_AFTER_S = 5.0


class Verdict(StrEnum):
    """What the receiver does with a batch."""

    TAKE = "take"  # it follows the last one taken from its agent
    REPLAY = "replay"  # taken before (its number is not above the last): dropped
    GAP = "gap"  # one before it is missing: the agent is asked to resend


class ReplayFilter:
    """The cloud receiver's bookkeeping: the last sequence number taken per agent.

    The receiver keeps ``last`` in its checkpointed state, so after a
    rollback it drops exactly the batches that the restored state holds.
    """

    def __init__(self, last: dict[str, int] | None = None) -> None:
        self.last: dict[str, int] = {} if last is None else last

    def check(self, agent: str, seq: int, prev: int) -> Verdict:
        """``take`` the batch after the last one taken, or it is a ``replay`` or a ``gap``."""
        last = self.last.get(agent, 0)
        if seq <= last:
            return Verdict.REPLAY
        if prev != last:
            return Verdict.GAP
        return Verdict.TAKE

    def accept(self, agent: str, seq: int, prev: int | None = None) -> bool:
        """Take the batch if it follows the last one (``prev`` None: any later number)."""
        last = self.last.get(agent, 0)
        if self.check(agent, seq, last if prev is None else prev) is not Verdict.TAKE:
            return False
        self.last[agent] = seq
        return True


def split_batch(
    payload: bytes | memoryview, arity: Mapping[str, int]
) -> tuple[list[tuple[str, list[Any]]], list[tuple[Any, str]]]:
    """An agent's batch as the rows to emit and the ones to dead-letter (each with why).

    ``arity``: each stream the receiver declares, and how many fields it has. Never raises:
    bytes that are not a list of rows come back as one bad row (the bytes themselves)."""
    try:
        rows = decode(payload)
    except DecodeError as exc:
        return [], [(bytes(payload), f"an uplink batch that does not decode: {exc}")]
    if type(rows) is not list:
        return [], [(rows, f"an uplink batch that is not a list of rows: {type(rows).__name__}")]
    good: list[tuple[str, list[Any]]] = []
    bad: list[tuple[Any, str]] = []
    for row in rows:
        problem = _row_problem(row, arity)
        if problem is None:
            good.append((row[0], row[1]))
        else:
            bad.append((row, problem))
    return good, bad


def _row_problem(row: Any, arity: Mapping[str, int]) -> str | None:
    if type(row) is not list or len(row) != 2:
        return "an uplink row that is not [stream, values]"
    stream, values = row
    if type(stream) is not str or stream not in arity:
        declared = ", ".join(repr(s) for s in arity)
        return f"an uplink row for stream {stream!r:.80}, which is not one of {declared}"
    if type(values) is not list or len(values) != arity[stream]:
        return f"an uplink row whose values are not a list of {arity[stream]} for {stream!r}"
    if stream == DEAD_LETTERS and not all(type(v) is str for v in values[:3]):
        return "an uplink dead letter whose component, reason or traceback is not a string"
    return None


class UplinkSpout(Spout):
    """Cloud side: emits the agents' batches of one boundary component, each exactly once."""

    def __init__(self, component: str) -> None:
        self.component = component
        # whether it says its state to the agents on opening (a hand-over bolt's tasks other
        # than the one the ingress hands the batches to stay silent)
        self.announce = True

    def open(self, ctx: Context) -> None:
        if not isinstance(ctx, RuntimeContext):
            raise TypeError(f"{type(self).__name__} runs only inside the runtime's instances")
        self.ctx = ctx
        self.inbox: deque[tuple[str, int, int, memoryview]] = deque()
        self.filter = ReplayFilter(ctx.state.setdefault("last", {}))  # agent -> seq taken
        self.last = self.filter.last
        self.at_checkpoint: dict[int, dict[str, int]] = {}
        rc = RuntimeConfig.from_mapping(ctx.config)
        # without checkpoints nothing will hold a batch later: confirm it once emitted
        self.confirm_at_once = rc.reliability is not Reliability.EXACTLY_ONCE
        self.asked: dict[str, tuple[int, float]] = {}  # agent -> (resend_after, when)
        self._arity: tuple[object, dict[str, int]] = (None, {})
        self.split: MoveSplit | None = None
        # a fresh or restored receiver: every agent resends what follows its state
        if self.announce:
            self._feedback(agent="", resync=dict(self.last))

    def on_uplink(self, agent: str, seq: int, prev: int, rows: memoryview) -> None:
        """An agent's batch, from the ingress (taken, or not, in ``next_tuple``)."""
        self.inbox.append((agent, seq, prev, rows))

    def next_tuple(self) -> None:
        if not self.inbox:
            return
        agent, seq, prev, payload = self.inbox.popleft()
        verdict = self.filter.check(agent, seq, prev)
        if verdict is Verdict.REPLAY:
            self.ctx.incr("uplink_replays_dropped")
            self._feedback(agent=agent, consumed=seq)
            return
        if verdict is Verdict.GAP:
            last = self.last.get(agent, 0)
            self.ctx.incr("uplink_gaps")
            asked = self.asked.get(agent)
            now = time.monotonic()
            if asked is None or asked[0] != last or now - asked[1] > RESEND_AFTER_S:
                self.asked[agent] = (last, now)
                self._feedback(agent=agent, resend_after=last)
            return
        emit = self.ctx.emit
        rows, bad = split_batch(payload, self.arity())  # (and the split, for this revision)
        split = self.split
        for stream, values in rows:
            if stream == FENCE_STREAM:  # a move's fence: to every task of its cloud copy
                problem = fence_problem(values)
                if problem is None:  # alone between the rows before and after it
                    if split is not None:
                        split.fence(agent, values[0], values[-1])
                    self.ctx.flush()
                    emit([agent, *values], stream=FENCE_OUT)
                    self.ctx.flush()
                else:
                    bad.append(([stream, values], problem))
                continue
            emit(values, stream=stream)
            if split is not None and (copy := split.copies(agent, stream)) is not None:
                emit(values, stream=copy)  # the moved component's cloud copy counts it
            if stream == DEAD_LETTERS:  # an edge domain's: listed under this /exceptions too
                self.ctx.report_dead_letter(values, f"agent {agent}")
        for record, reason in bad:  # taken all the same: resent, it would be as bad
            dead = [self.component, reason, "", record]
            emit(dead, stream=DEAD_LETTERS)
            self.ctx.report_dead_letter(dead, f"agent {agent}")
        self.last[agent] = seq
        self.ctx.incr("uplink_batches")
        self.ctx.incr("uplink_rows", len(rows))
        if bad:
            self.ctx.incr("uplink_bad_rows", len(bad))
        self._feedback(agent=agent, consumed=seq, confirmed=seq if self.confirm_at_once else 0)

    def arity(self) -> dict[str, int]:
        """Each stream it takes rows of, and how many fields each has; a fence row where a
        moved component that reads it takes fences (``plan/_domains.cloud_part``). Read
        from the revision it runs (a live edit may add the fence without restarting it)."""
        topology = self.ctx.topology
        if self._arity[0] is not topology:
            spec = topology.component(self.ctx.component)
            arity = {
                s.name: len(s.fields)
                for s in spec.streams
                if s.name != FENCE_OUT and not s.name.startswith(MOVE_PREFIX)  # the runtime's
            }
            if spec.stream(FENCE_OUT) is not None:
                arity[FENCE_STREAM] = len(FENCE_FIELDS)
            self._arity = (topology, arity)
            self.split = self._split(topology)
        return self._arity[1]

    def _split(self, topology: TopologyView) -> MoveSplit | None:
        """Where the cloud also reads these rows and a component reading them moves: which
        of them its cloud copy counts (``_move_split.py``); None otherwise."""
        spec = topology.component(self.ctx.component)
        copies = [
            s.name[len(MOVE_PREFIX) :] for s in spec.streams if s.name.startswith(MOVE_PREFIX)
        ]
        if not copies:
            return None
        reader = next(
            c
            for c in topology.components
            if any(i.component == spec.name and i.stream.startswith(MOVE_PREFIX) for i in c.inputs)
        )
        before = "cloud" if reader.config.get(HANDOVER) == "cloud" else "edge"
        return MoveSplit(copies, self.ctx.state, before)

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
        self.ctx.system(
            UplinkFeedback(self.component, agent, consumed, confirmed, resend_after, resync or {})
        )
