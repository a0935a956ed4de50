"""A small simulated topology for the health manager's tests: a source and one bolt.

The bolt's tasks each cost a fixed time per record; a source emits its demand unless a
task cannot keep up, then it is held back to what the slowest task's share allows, and
that task is charged the backpressure. Counters are cumulative, as the master reports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from headwater.common.health import Action, ComponentInfo, Sample, TaskSample

SOURCE_TASK = 1
FIRST = 10


@dataclass
class Sim:
    parallelism: int = 2
    cost: float = 0.01  # seconds of busy time per record
    grouping: str = "shuffle"
    edge: bool = False
    backlog: float | None = None  # an edge ingest backlog (records): the unmet demand waits
    cap: int | None = None  # an edge component's room on its agents
    uplinks_up: bool = True
    ingested: float | None = None  # with a backlog: the records ingested so far (the log's end)
    costs: dict[int, float] = field(default_factory=dict)  # a task's own cost (a slow one)
    shares: list[float] | None = None  # fields grouping: each task's share of the records
    hot_keys: dict[int, tuple[tuple[str, float], ...]] = field(default_factory=dict)
    at: float = 1_000.0
    revision: int = 1
    tasks: dict[int, TaskSample] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tasks[SOURCE_TASK] = TaskSample(SOURCE_TASK, "src")
        for t in self.bolt_tasks():
            self.tasks[t] = TaskSample(t, "work")

    def bolt_tasks(self) -> list[int]:
        return list(range(FIRST, FIRST + self.parallelism))

    def sample(self) -> Sample:
        components = {
            "src": ComponentInfo("src", 1, source=True, edge=self.edge),
            "work": ComponentInfo(
                "work", self.parallelism, (("src", self.grouping),), edge=self.edge, cap=self.cap
            ),
        }
        return Sample(
            "t",
            self.revision,
            self.at,
            components,
            dict(self.tasks),
            ingest_backlog=self.backlog,
            uplinks_up=self.uplinks_up,
            ingest_end=self.ingested,
        )

    def _shares(self) -> list[float]:
        if self.shares is not None and len(self.shares) == self.parallelism:
            return self.shares
        return [1.0 / self.parallelism] * self.parallelism

    def step(self, demand: float, dt: float = 10.0) -> Sample:
        """Run ``dt`` seconds at ``demand`` records per second, then sample."""
        shares = self._shares()
        tasks = self.bolt_tasks()
        caps = [
            1.0 / (self.costs.get(t, self.cost) * s) for t, s in zip(tasks, shares, strict=True)
        ]
        offered = demand + (self.backlog or 0.0) / dt  # a backlog waits to be read
        emit = min(offered, *caps)
        held = 1.0 - emit / offered if offered > 0 else 0.0
        if self.backlog is not None:
            self.backlog += (demand - emit) * dt
        if self.ingested is not None:
            self.ingested += demand * dt
        src = self.tasks[SOURCE_TASK]
        self.tasks[SOURCE_TASK] = replace(
            src,
            executed=src.executed + emit * dt,
            emitted=src.emitted + emit * dt,
            busy_ns=src.busy_ns + emit * dt * 1e-5 * 1e9,
            backpressure_ms=src.backpressure_ms + held * dt * 1e3,
        )
        for t, s, cap in zip(tasks, shares, caps, strict=True):
            n = emit * s * dt
            cur = self.tasks[t]
            bottleneck = held > 0 and cap <= emit * (1 + 1e-9)
            self.tasks[t] = replace(
                cur,
                executed=cur.executed + n,
                emitted=cur.emitted + n,
                received=cur.received + n,
                busy_ns=cur.busy_ns + n * self.costs.get(t, self.cost) * 1e9,
                backpressure_ms=cur.backpressure_ms + (held * dt * 1e3 if bottleneck else 0.0),
                hot_keys=self.hot_keys.get(t, ()),
            )
        self.at += dt
        return self.sample()

    def apply(self, action: Action, fixes: bool = True) -> None:
        """A rescale changes the tasks (new ones start at zero); a restart fixes a slow task."""
        if action.kind == "rescale" and action.parallelism is not None:
            for t in self.bolt_tasks():
                del self.tasks[t]
            self.parallelism = action.parallelism
            for t in self.bolt_tasks():
                self.tasks[t] = self.tasks.get(t, TaskSample(t, "work"))
            self.revision += 1
        elif action.kind == "restart" and fixes:
            for t in action.tasks:
                self.costs.pop(t, None)
