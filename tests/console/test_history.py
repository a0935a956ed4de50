"""common/console/_history*.py: the rings, counter resets, windows, memory, and the route."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from headwater import Bolt, Spout, Topology, shuffle
from headwater.cloud.console._edge_sources import EdgeSources
from headwater.common._clock import ManualClock
from headwater.common.console._history import FIELDS, History, Series, Source
from headwater.common.console._history_http import add_history_routes
from headwater.common.console._history_query import (
    MAX_POINTS,
    POINT_BUDGET,
    RATE_WINDOW_S,
    rates_view,
    series_view,
)
from headwater.common.control import TopologyMaster
from headwater.common.plan import pack_round_robin
from headwater.common.wire.proto import runtime_pb2 as pb


class Src(Spout):
    outputs = ("n",)

    def next_tuple(self) -> None: ...


class Sink(Bolt):
    def process(self, tup: object) -> None: ...


def _tm(tmp_path: Path, clock: ManualClock, name: str = "t") -> TopologyMaster:
    topology = (
        Topology(name)
        .add_spout("src", Src)
        .add_bolt("sink", Sink, inputs={"src": shuffle()}, parallelism=2)
    )
    return TopologyMaster(topology, pack_round_robin(topology, 2), tmp_path / name, clock=clock)


def _report(tm: TopologyMaster, clock: ManualClock, per_task: dict[int, float]) -> None:
    """Every task's container heartbeats now with ``executed`` = ``per_task[task]``."""
    for inst in tm.plan.instances:
        n = per_task.get(inst.task_id, 0.0)
        tm.metrics[f"task:{inst.task_id}"] = {
            "executed": n,
            "emitted": 2 * n,
            "backpressure_ms": n / 10,
            "pending": 3.0,
            "execute_latency_us": 100.0 + inst.task_id,
        }
        tm.last_heartbeat[inst.container] = clock.monotonic()


def _source(t: float, executed: float, key: object = "a") -> Source:
    return Source(key, "c", None, t, (executed, 0.0, 0.0, 0.0, 0.0), (0.0, 0.0))


def test_a_ring_keeps_the_newest_samples_in_order_when_it_wraps() -> None:
    s = Series(3)
    for i in range(5):
        s.append(float(i), [float(i)] * len(FIELDS))
    assert [t for t, _ in s.since(0.0)] == [2.0, 3.0, 4.0]
    assert [v[0] for _, v in s.since(3.0)] == [3.0, 4.0]
    assert s.last_time() == 4.0
    assert s.nbytes() == 3 * Series.BYTES_PER_SAMPLE


def test_a_counter_that_starts_again_from_zero_adds_what_it_counted_since() -> None:
    clock = ManualClock()
    h = History(dict, tick_s=1.0, window_s=60.0, clock=clock)
    t = clock.monotonic()
    for dt, executed in [(0, 500.0), (1, 510.0), (2, 520.0), (3, 4.0), (4, 14.0)]:
        h.record("x", [_source(t + dt, executed)])
    increments = [v[0] for _, v in h.of["x"].components["c"].since(0.0)]
    # the first report is a baseline; the restart's 4 counted since it started again
    assert increments == [10.0, 10.0, 4.0, 10.0]


def test_a_source_that_has_not_reported_again_adds_no_sample() -> None:
    clock = ManualClock()
    h = History(dict, tick_s=1.0, window_s=60.0, clock=clock)
    t = clock.monotonic()
    h.record("x", [_source(t, 0.0)])
    h.record("x", [_source(t + 1, 10.0)])
    h.record("x", [_source(t + 1, 10.0)])  # the same report, read at the next tick
    h.record("x", [_source(t + 2, 20.0)])
    series = h.of["x"].components["c"]
    assert [round(t - clock.monotonic(), 3) for t, _ in series.since(0.0)] == [1.0, 2.0]


def test_tasks_are_summed_per_component_and_kept_per_task(tmp_path: Path) -> None:
    clock = ManualClock()
    tm = _tm(tmp_path, clock)
    h = History(lambda: {"t": tm}, tick_s=1.0, window_s=60.0, clock=clock)
    for i in range(11):
        _report(tm, clock, {2: 30.0 * i, 3: 10.0 * i})  # sink's two tasks: 30/s and 10/s
        h.tick()
        clock.advance(1.0)
    rates = rates_view(h, ["t"], "t")
    assert rates["window_s"] == RATE_WINDOW_S
    sink = rates["components"]["sink"]
    assert sink["in"] == pytest.approx(40.0)
    assert sink["out"] == pytest.approx(80.0)
    assert sink["bp"] == pytest.approx(4.0 / 1000 / 2)  # 4 ms a second over two tasks
    assert rates["topologies"]["t"] == pytest.approx(40.0)  # src reports 0
    view = series_view(h, "t", 60.0, "sink", True)
    assert view is not None
    assert list(view["components"]) == ["sink"]
    assert view["components"]["sink"]["mean"]["executed"] == pytest.approx(40.0)
    assert view["components"]["sink"]["latency_us"][-1] == 103.0  # the slowest task's
    assert view["components"]["sink"]["pending"][-1] == 6.0  # summed
    assert {k: v["component"] for k, v in view["tasks"].items()} == {"2": "sink", "3": "sink"}
    assert view["tasks"]["2"]["mean"]["executed"] == pytest.approx(30.0)


def test_a_chart_steps_up_when_the_rate_doubles_and_the_window_bounds_it() -> None:
    clock = ManualClock()
    h = History(dict, tick_s=1.0, window_s=120.0, clock=clock)
    n = 0.0
    for i in range(100):
        n += 20.0 if i < 50 else 40.0
        h.record("x", [_source(clock.monotonic(), n)])
        clock.advance(1.0)
    view = series_view(h, "x", 30.0, None, False)
    assert view is not None
    c = view["components"]["c"]
    assert c["executed"] and all(r == pytest.approx(40.0) for r in c["executed"])
    assert c["t"][0] >= view["time"] - 30.0
    whole = series_view(h, "x", 120.0, None, False)
    assert whole is not None
    rates = whole["components"]["c"]["executed"]
    assert rates[0] == pytest.approx(20.0) and rates[-1] == pytest.approx(40.0)
    assert len(rates) <= MAX_POINTS


def test_an_answer_of_many_series_holds_fewer_points_each() -> None:
    clock = ManualClock()
    h = History(dict, tick_s=1.0, window_s=600.0, clock=clock)
    for i in range(600):
        h.record(
            "x",
            [
                Source(c, f"c{c}", None, clock.monotonic(), (i, 0, 0, 0, 0), (0, 0))
                for c in range(400)
            ],
        )
        clock.advance(1.0)
    view = series_view(h, "x", 600.0, None, False)
    assert view is not None
    counts = {len(s["t"]) for s in view["components"].values()}
    assert max(counts) * 400 <= POINT_BUDGET and min(counts) >= 20
    one = series_view(h, "x", 600.0, "c7", False)
    assert one is not None and 100 < len(one["components"]["c7"]["t"]) <= MAX_POINTS


def test_the_memory_is_bounded_by_the_window(tmp_path: Path) -> None:
    clock = ManualClock()
    tm = _tm(tmp_path, clock)
    h = History(lambda: {"t": tm}, tick_s=2.0, window_s=20.0, clock=clock)
    for i in range(40):  # four times the window
        _report(tm, clock, {1: i, 2: i})
        h.tick()
        clock.advance(2.0)
    rings = h.of["t"]
    # 2 components and 3 tasks (src's one, sink's two): 5 rings of 11 samples
    assert len(rings.components) == 2 and len(rings.tasks) == 3
    assert all(s.size == h.capacity == 11 for s in rings.components.values())
    assert h.nbytes() == 5 * 11 * Series.BYTES_PER_SAMPLE


def test_a_killed_topology_is_forgotten_and_a_new_one_of_its_name_starts_anew(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    tms = {"t": _tm(tmp_path, clock)}
    h = History(lambda: tms, tick_s=1.0, window_s=60.0, clock=clock)
    for i in range(3):
        _report(tms["t"], clock, {1: i})
        h.tick()
        clock.advance(1.0)
    assert h.of["t"].components
    del tms["t"]
    h.tick()
    assert h.of == {}
    tms["t"] = _tm(tmp_path / "again", clock)
    h.tick()
    assert h.of["t"].tm is tms["t"] and not h.of["t"].components


def _serve(history: History, body: Any) -> None:
    async def scenario() -> None:
        app = web.Application()
        add_history_routes(app, history)
        client = TestClient(TestServer(app))
        await client.start_server()
        try:
            await body(client)
        finally:
            await client.close()

    asyncio.run(scenario())


def test_the_route_answers_series_and_refuses_bad_values_saying_what_to_give(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    tm = _tm(tmp_path, clock)
    h = History(lambda: {"t": tm}, tick_s=1.0, window_s=60.0, clock=clock)
    for i in range(5):
        _report(tm, clock, {2: 10.0 * i})
        h.tick()
        clock.advance(1.0)

    async def body(client: TestClient[Any, Any]) -> None:
        r = await client.get("/api/v1/topologies/t/history?window=60&component=sink&tasks=1")
        assert r.status == 200
        view = await r.json()
        assert set(view["components"]) == {"sink"} and set(view["tasks"]) == {"2", "3"}
        assert set(view["components"]["sink"]) >= {"t", "mean", *FIELDS}
        assert view["history_s"] == 60.0 and view["units"]["executed"] == "tuples/s"
        for query, words in [
            ("window=abc", "window must be"),
            ("window=0", "window must be"),
            ("window=nan", "window must be"),
            ("window=61", "from 1 to 60"),
            ("tasks=maybe", "tasks must be"),
        ]:
            r = await client.get(f"/api/v1/topologies/t/history?{query}")
            assert r.status == 400, query
            assert words in (await r.json())["error"], query
        r = await client.get("/api/v1/topologies/t/history?component=nope")
        assert r.status == 404 and "give one of: sink, src" in (await r.json())["error"]
        r = await client.get("/api/v1/topologies/other/history")
        assert r.status == 404 and "running: t" in (await r.json())["error"]

    _serve(h, body)


class _Record:
    def __init__(self, status: pb.NodeStatus, last_seen: float) -> None:
        self.status, self.last_seen = status, last_seen


def _status(executed: float) -> pb.NodeStatus:
    status = pb.NodeStatus()
    status.metrics["component:t/count:executed"] = executed
    status.metrics["component:t/count:emitted"] = executed
    status.metrics["component:t/count:user:executed"] = 1e9  # a user counter: not the history's
    status.metrics["component:other/count:executed"] = 1e9  # another topology's
    status.metrics["edge_task:t/count/4:backpressure_ms"] = executed / 10
    status.metrics["edge_task:t/count/4:in_queue_frames"] = 7.0
    return status


def test_an_edge_component_sums_its_agents_and_survives_an_agent_restarting() -> None:
    clock = ManualClock()
    master: Any = SimpleNamespace(
        deployments={"t": SimpleNamespace(agents=["a1", "a2"])},
        nodes=SimpleNamespace(records={}),
    )
    h = History(lambda: {}, EdgeSources(master), tick_s=2.0, window_s=60.0, clock=clock)
    counts = {"a1": 0.0, "a2": 0.0}
    for i in range(8):
        counts["a1"] += 20.0  # 10/s
        counts["a2"] = 10.0 * (i + 1) if i != 4 else 5.0  # 5/s, restarted at the 5th report
        if i > 4:
            counts["a2"] = 5.0 + 10.0 * (i - 4)
        for agent, n in counts.items():
            master.nodes.records[agent] = _Record(_status(n), clock.monotonic())
        h.record("t", h.edge("t"))
        clock.advance(2.0)
    increments = [v[0] for _, v in h.of["t"].components["count"].since(0.0)]
    assert increments == [30.0, 30.0, 30.0, 25.0, 30.0, 30.0, 30.0]
    assert h.of["t"].edge == {"count"}
    _, last = list(h.of["t"].components["count"].since(0.0))[-1]
    assert last[FIELDS.index("backpressure_ms")] == 3.0  # 2 + 1 ms of the two agents' task 4
    assert last[FIELDS.index("pending")] == 14.0
