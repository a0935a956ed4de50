"""``run_main`` and ``LocalRun``: a whole topology in one process, one thread, deterministic.

Every task of every component is instantiated with its own ``TestContext``, opened
(``on_restore(0)`` under exactly-once) and, for spouts, activated. ``run`` then calls
each spout's ``next_tuple`` in turn (task order) and, after every call, delivers
everything that call set off before the next: each emitted tuple goes through the
runtime's groupings (``plan/_routing.py``) to its destination tasks' ``process``, in
emission order, its values copied through the wire codec as in a frame. A bolt's
``process`` that raises follows the runtime's poison-record policy (retried, then
dead-lettered, on ``__dead_letters`` if a sink takes them). Under at-least-once the
tuple trees of tracked emits are followed (an anchored emit joins its anchors' trees)
and the spout's ``on_ack``/``on_fail`` come back between calls; otherwise a tracked
emit is acked at once, as in the runtime. A spout is done after ``idle_calls`` calls
in a row that neither emitted nor returned True (an ack or fail wakes it again), or
after ``max_calls`` calls; the run ends when every spout is done and nothing is left
to deliver. ``advance`` moves the ``ManualClock`` and delivers the ticks it passes;
``checkpoint`` calls ``on_checkpoint`` then ``on_commit`` everywhere.

What it does not model: processes, the stream managers and their batching, frames and
backpressure, max spout pending, message timeouts (a tree never acked stays in
``pending``), snapshots, restores and recovery, placement (edge and cloud run alike),
the uplink, live edits. It is for unit-testing a topology's logic, not its delivery
guarantees.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import count
from typing import Any

from headwater.common._clock import ManualClock
from headwater.common.api import (
    DEFAULT_STREAM,
    TICK_COMPONENT,
    TICK_STREAM,
    Bolt,
    Reliability,
    RuntimeConfig,
    Spout,
    Topology,
    Tuple,
)
from headwater.common.api._state import StatefulComponent
from headwater.common.dsl import Pipeline
from headwater.common.plan import task_ids, validate
from headwater.common.wire import decode, encode

from ._context import Emitted, TestContext


@dataclass
class _Task:
    component: str
    obj: Spout | Bolt
    ctx: TestContext
    acking: bool
    tick_s: float | None
    next_tick: float = float("inf")
    idle: int = 0
    calls: int = 0


@dataclass
class _Tree:
    spout: int  # the spout's task
    tup_id: Any
    outstanding: int = 0  # tuples of the tree delivered or queued, not yet acked


@dataclass
class _Delivery:
    task: int
    tup: Tuple


@dataclass
class _Outcome:
    spout: int
    tup_id: Any
    acked: bool


class LocalRun:
    """A topology (or a DSL ``Pipeline``) running in this process; see the module docstring.

    >>> from headwater.dsl import Pipeline
    >>> out: list = []
    >>> p = Pipeline("p")
    >>> p.from_collection("n", [1, 2, 3]).map("sq", lambda v: v * v).sink("out", out.append)
    >>> _ = run_main(p)
    >>> out
    [1, 4, 9]
    """

    def __init__(
        self,
        topology: Topology | Pipeline,
        *,
        clock: ManualClock | None = None,
        idle_calls: int = 3,
        max_calls: int = 100_000,
    ) -> None:
        if isinstance(topology, Pipeline):
            topology = topology.build()
        validate(topology)
        self.topology = topology
        self.clock = clock if clock is not None else ManualClock()
        self.idle_calls, self.max_calls = idle_calls, max_calls
        self.exactly_once = (
            RuntimeConfig.from_mapping(topology.config).reliability is Reliability.EXACTLY_ONCE
        )
        self.ids = task_ids(topology)
        self.tasks: dict[int, _Task] = {}
        self.log: list[tuple[str, Emitted]] = []  # (component, what it emitted), in order
        self.dead_letters: list[list[Any]] = []  # [component, reason, traceback, record]
        self._wiring = _Wiring(self)
        self._checkpoint = 0
        self._opened = self._closed = False
        for spec in topology.components:
            for index, task in enumerate(self.ids[spec.name]):
                ctx = TestContext(topology, spec.name, index=index, hooks=self._wiring)
                rc = RuntimeConfig.from_mapping(ctx.config)
                self.tasks[task] = _Task(
                    spec.name, spec.factory(), ctx, rc.acking, rc.tick_interval_s
                )

    # -- reading the outcome ---------------------------------------------------------
    def instances(self, component: str) -> list[Spout | Bolt]:
        """The component objects of ``component``'s tasks, in task order."""
        return [self.tasks[t].obj for t in self.ids[component]]

    def context(self, component: str, index: int = 0) -> TestContext:
        return self.tasks[self.ids[component][index]].ctx

    def emitted(self, component: str, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        """The values every task of ``component`` emitted on ``stream``, in order."""
        return [e.values for c, e in self.log if c == component and e.stream == stream]

    @property
    def pending(self) -> int:
        """Tuple trees neither acked nor failed yet (under at-least-once)."""
        return len(self._wiring.trees)

    # -- driving it ------------------------------------------------------------------
    def open(self) -> None:
        """Open every task (``run`` does it when needed)."""
        if self._opened:
            return
        self._opened = True
        now = self.clock.monotonic()
        for task in self.tasks.values():
            if isinstance(task.obj, StatefulComponent):
                task.obj.init_state(task.ctx.state)
            task.obj.open(task.ctx)
            if self.exactly_once:
                task.obj.on_restore(0)
            if isinstance(task.obj, Spout):
                task.obj.activate()
            elif task.tick_s:
                task.next_tick = now + task.tick_s
        self._drain()

    def run(self) -> LocalRun:
        """Call the spouts until every one is done, delivering all they set off."""
        self.open()
        spouts = [(t, task) for t, task in self.tasks.items() if isinstance(task.obj, Spout)]
        while True:
            called = False
            for _, task in spouts:
                if task.idle >= self.idle_calls or task.calls >= self.max_calls:
                    continue
                assert isinstance(task.obj, Spout)
                before = len(task.ctx.emitted)
                worked = task.obj.next_tuple()
                task.calls += 1
                task.idle = (
                    0 if worked is True or len(task.ctx.emitted) != before else task.idle + 1
                )
                called = True
                self._drain()
            if not called:
                return self

    def advance(self, seconds: float) -> None:
        """Move the clock on; every bolt with a tick interval gets the ticks it passed."""
        self.open()
        self.clock.advance(seconds)
        now = self.clock.monotonic()
        while True:
            due = min(self.tasks.values(), key=lambda t: t.next_tick)
            if due.next_tick > now:
                return
            assert isinstance(due.obj, Bolt) and due.tick_s is not None
            due.next_tick += due.tick_s
            due.obj.on_tick(Tuple("__tick", TICK_COMPONENT, TICK_STREAM, 0, [], self.clock.time()))
            self._drain()

    def checkpoint(self) -> int:
        """Every task's ``on_checkpoint`` (spouts first), then every ``on_commit``: no snapshot
        is taken, but transactional sinks publish. Returns the checkpoint's id."""
        self.open()
        self._drain()
        self._checkpoint += 1
        n = self._checkpoint
        ordered = sorted(self.tasks.values(), key=lambda t: not isinstance(t.obj, Spout))
        for task in ordered:
            if isinstance(task.obj, StatefulComponent):
                task.obj.pre_save(n)
            task.obj.on_checkpoint(n)
        self._drain()
        for task in ordered:
            task.obj.on_commit(n)
        self._drain()
        return n

    def close(self) -> None:
        """``close`` every task (an orderly shutdown)."""
        if self._opened and not self._closed:
            self._closed = True
            for task in self.tasks.values():
                task.obj.close()

    def __enter__(self) -> LocalRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- delivery --------------------------------------------------------------------
    def _drain(self) -> None:
        queue = self._wiring.queue
        while queue:
            item = queue.popleft()
            if isinstance(item, _Delivery):
                self._process(self.tasks[item.task], item.tup)
                continue
            spout = self.tasks[item.spout]
            assert isinstance(spout.obj, Spout)
            spout.idle = 0  # an ack or a fail may give it more to do
            if item.acked:
                spout.obj.on_ack(item.tup_id)
            else:
                spout.obj.on_fail(item.tup_id)

    def _process(self, task: _Task, tup: Tuple) -> None:
        bolt, ctx = task.obj, task.ctx
        assert isinstance(bolt, Bolt)
        ctx.current = tup
        try:
            bolt.process(tup)
        except Exception as exc:
            handled = ctx.retry_record(task.component, lambda: bolt.process(tup), exc, tup.values)
            if not handled and task.acking and tup.roots:
                ctx.ack(tup)  # its record is in the dead letters: the tree goes on
        finally:
            ctx.current = None


class _Wiring:
    """The contexts' hooks: routes what they emit into the queue, follows tuple trees."""

    def __init__(self, run: LocalRun) -> None:
        self.run = run
        self.queue: deque[_Delivery | _Outcome] = deque()
        self.trees: dict[int, _Tree] = {}
        self._roots = count(1)

    def emitted(self, ctx: TestContext, record: Emitted, dests: list[int]) -> None:
        run = self.run
        run.log.append((ctx.component, record))
        task = run.tasks[ctx.task_id]
        spout = isinstance(task.obj, Spout)
        roots: list[int] = []
        if task.acking:
            if record.anchors:
                roots = list(dict.fromkeys(r for a in record.anchors for r in a.roots or ()))
            elif record.tup_id is not None and spout:
                root = next(self._roots)
                self.trees[root] = _Tree(ctx.task_id, record.tup_id)
                roots = [root]
        elif record.tup_id is not None and spout:
            self.queue.append(_Outcome(ctx.task_id, record.tup_id, True))  # acked at once
        if not dests:
            if spout and roots:  # nobody subscribes: complete at once
                self._outcome(self.trees.pop(roots[0]), True)
            return
        payload = encode(record.values)  # as in a frame: what the codec cannot carry fails
        now = run.clock.time()
        for dest in dests:
            tup = Tuple(
                None, ctx.component, record.stream, ctx.task_id, decode(payload), now, roots or None
            )
            for root in roots:
                tree = self.trees.get(root)
                if tree is not None:
                    tree.outstanding += 1
            self.queue.append(_Delivery(dest, tup))

    def acked(self, ctx: TestContext, tup: Tuple) -> None:
        if not self.run.tasks[ctx.task_id].acking:
            return
        for root in tup.roots or ():
            tree = self.trees.get(root)
            if tree is not None:
                tree.outstanding -= 1
                if tree.outstanding <= 0:
                    self._outcome(self.trees.pop(root), True)

    def failed(self, ctx: TestContext, tup: Tuple) -> None:
        if not self.run.tasks[ctx.task_id].acking:
            return
        for root in tup.roots or ():
            tree = self.trees.pop(root, None)
            if tree is not None:
                self._outcome(tree, False)

    def dead_lettered(self, ctx: TestContext, row: list[Any]) -> None:
        self.run.dead_letters.append(row)

    def _outcome(self, tree: _Tree, acked: bool) -> None:
        self.queue.append(_Outcome(tree.spout, tree.tup_id, acked))


def run_main(
    topology: Topology | Pipeline,
    *,
    clock: ManualClock | None = None,
    idle_calls: int = 3,
    max_calls: int = 100_000,
) -> LocalRun:
    """Run ``topology`` to the end in this process (``LocalRun.run``), take a last checkpoint
    under exactly-once (so transactional sinks publish), close it, and return it to read."""
    run = LocalRun(topology, clock=clock, idle_calls=idle_calls, max_calls=max_calls)
    try:
        run.run()
        if run.exactly_once:
            run.checkpoint()
    finally:
        run.close()
    return run
