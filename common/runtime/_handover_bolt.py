"""The cloud side of a moved component: a hand-over bolt (issue 37, moves).

A move places a running component elsewhere (edge <-> cloud) and marks it (the component
config ``headwater.handover``). Each agent switches at a barrier of its own, the cloud at
another, so for a while some agents run the component on the edge and others still send its
input up. The cloud subgraph therefore keeps, under the component's name, a ``HandoverBolt``
(``plan/_domains.cloud_part``): it runs the user's code on the input that reaches the cloud
(what agents produced under a placement that puts the component in the cloud), and it is
also the receiver of the component's edge copies (their outbox, what agents produced under a
placement that puts it on the edge), forwarding their rows on the component's streams with
the exactly-once of any receiver (``UplinkSpout``'s replay filter, kept in the state under
the same name, so a receiver that becomes a wrapper keeps its place). A record is in one of
the two streams, never both, by the side of its agent's switch barrier it was read on.

A keyed component moved from the edge to the cloud takes each agent's state in that agent's
fence (``_fence.py``): the receiver of its input emits it to every task here, before the
agent's first row under the new placement, and each task takes the keys its fields grouping
routes to it (``take_fence``) into the user's keyed state. The fence is taken once per agent
and move (``FENCES``, in the task's state: a rollback restores it with the state it
guards); one whose state cannot move (held outside keyed state, unreadable, or a key this
task already holds: the declared key -> site relation is false) goes to the dead letters
with the reason, and no key of it is taken. Cloud -> edge, an agent's fence (sealed by its
retiring outbox sink after the last row it read under the old placement) makes every task
give up the keys of that agent's site (``_give``): they leave the user's keyed state for
``OUTGOING``, which the master takes from the committed checkpoint and hands to the agent,
whose new copy starts from them.
"""

from __future__ import annotations

from typing import Any

from ..api import DEAD_LETTERS, BatchBolt, Bolt, Context, RuntimeContext, Tuple
from ..api._config import SITES
from ..plan._routing import key_hash
from ._fence import FENCE_OUT, Fence
from ._handover import SITES_STATE, HandoverError, agent_state
from ._move_outgoing import OUTGOING
from ._receiver import UplinkSpout

FENCES = "__fences__"
"""The task's state: agent -> the revision of the newest move whose fence it took."""


class HandoverBolt(Bolt):
    """The user's component in the cloud, and the receiver of its edge copies' rows."""

    def __init__(self, component: str, inner: Bolt) -> None:
        self.component = component
        self.inner = inner
        self.receiver = UplinkSpout(component)

    def open(self, ctx: Context) -> None:
        if not isinstance(ctx, RuntimeContext):
            raise TypeError(f"{type(self).__name__} runs only inside the runtime's instances")
        self.ctx = ctx
        # its keys' sites declared: its state moves with it at each agent's fence
        self.keyed = isinstance(ctx.config.get(SITES), str)
        self.inner.open(ctx)
        # the ingress hands the batches to the component's first task (``receiver_task``):
        # only it tells the agents what it holds
        self.receiver.announce = ctx.component_index == 0
        self.receiver.open(ctx)  # its replay filter: the state's "last", as a receiver's

    def process(self, tup: Tuple) -> None:
        if tup.stream == FENCE_OUT:
            self.take_fence(tup.values)
        else:
            self.inner.process(tup)

    def take_fence(self, values: list[Any]) -> None:
        """An agent's switch point (``FENCE_OUT`` values): the keys of its state this task's
        grouping routes here; one whose state cannot be taken goes to the dead letters."""
        try:
            self._take(Fence.from_values(values))
        except HandoverError as exc:
            dead = [self.component, str(exc), "", values]
            self.ctx.emit(dead, stream=DEAD_LETTERS)
            self.ctx.report_dead_letter(dead, f"agent {values[0]}")

    def _take(self, fence: Fence) -> None:
        ctx = self.ctx
        taken = ctx.state.setdefault(FENCES, {})  # agent -> the newest move's fence taken
        if taken.get(fence.agent, 0) >= fence.revision:
            return
        if not self.keyed:  # no state moves: the fence only splits the rows
            taken[fence.agent] = fence.revision
            return
        if fence.to == "edge":  # its agent's rows stop here: its keys go to it
            self._give(fence.site, fence.revision)
            taken[fence.agent] = fence.revision
            return
        if fence.error:
            raise HandoverError(
                f"agent {fence.agent!r}'s state of {self.component!r} did not move to the "
                f"cloud: {fence.error}"
            )
        mine: dict[str, dict[Any, Any]] = {}
        if fence.state is not None:
            n, index = len(ctx.component_tasks(ctx.component)), ctx.component_index
            for name, values in agent_state(self.component, fence.state).items():
                held = ctx.keyed_state(name)
                keys = {k: v for k, v in values.items() if key_hash(k) % n == index}
                both = [k for k in keys if k in held]
                if both:
                    raise HandoverError(
                        f"{self.component!r}: agent {fence.agent!r} (site {fence.site!r}) "
                        f"and the cloud both hold {name!r} of the key {both[0]!r}, so its "
                        "declared key -> site relation is false; nothing of its state was "
                        "taken"
                    )
                mine[name] = keys
        for name, keys in mine.items():
            held = ctx.keyed_state(name)
            for key, value in keys.items():
                held[key] = value
        given = ctx.keyed_state(OUTGOING)
        if fence.site in given:  # what it gave that site before is back: no longer owed
            del given[fence.site]
        taken[fence.agent] = fence.revision
        ctx.incr("handover_keys", sum(len(k) for n, k in mine.items() if n != SITES_STATE))

    def _give(self, site: str, revision: int) -> None:
        """Take every key of ``site`` out of the task's keyed states into ``OUTGOING``
        (site -> the move's revision and name -> {key: value}), written even when empty,
        so that every task's
        snapshot says it: its container hands it to the master once that checkpoint
        commits (``_move_outgoing.py``), which sends the site's agent every task's part."""
        ctx = self.ctx
        sites = ctx.keyed_state(SITES_STATE)
        keys = [k for k, s in sites.items() if s == site]
        part: dict[str, dict[Any, Any]] = {}
        for name in ctx.keyed_names():
            if name == OUTGOING:
                continue
            held = ctx.keyed_state(name)
            mine = {k: held[k] for k in keys if k in held}
            for k in mine:
                del held[k]
            if mine:
                part[name] = mine
        ctx.keyed_state(OUTGOING)[site] = {"revision": revision, "keys": part}
        ctx.incr("handover_keys_given", len(keys))

    def on_uplink(self, agent: str, seq: int, prev: int, rows: memoryview) -> None:
        """An edge copy's batch: taken (or not) and its rows emitted, now, on this thread."""
        receiver = self.receiver
        receiver.on_uplink(agent, seq, prev, rows)
        while receiver.inbox:
            receiver.next_tuple()

    def on_tick(self, tup: Tuple) -> None:
        self.inner.on_tick(tup)

    def on_restore(self, checkpoint_id: int) -> None:
        self.inner.on_restore(checkpoint_id)

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self.inner.on_checkpoint(checkpoint_id)
        self.receiver.on_checkpoint(checkpoint_id)

    def on_commit(self, checkpoint_id: int) -> None:
        self.inner.on_commit(checkpoint_id)
        self.receiver.on_commit(checkpoint_id)

    def close(self) -> None:
        self.inner.close()


class HandoverBatchBolt(HandoverBolt):
    """A hand-over bolt whose user component takes whole frames (a DSL chain)."""

    def process_values(
        self, component: str, stream: str, task: int, entries: list[list[Any]]
    ) -> None:
        if stream == FENCE_OUT:
            for values in entries:
                self.take_fence(values)
            return
        inner = self.inner
        assert isinstance(inner, BatchBolt)
        inner.process_values(component, stream, task, entries)


def handover(component: str, inner: Any) -> Bolt:
    """The hand-over bolt of ``component`` whose user factory is ``inner``."""
    bolt = inner()
    if not isinstance(bolt, Bolt):
        raise TypeError(f"{component!r} is not a bolt: only a bolt moves")
    cls = HandoverBatchBolt if isinstance(bolt, BatchBolt) else HandoverBolt
    return cls(component, bolt)
