"""The master's health loop: samples built from a metrics view and the plan, a decider's
actions applied as live edits (author ``health-manager``) or not at all, its REST routes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from headwater.cloud.master import Master
from headwater.cloud.master._health_loop import AUTHOR
from headwater.cloud.master._health_parts import (
    policy_from_config,
    policy_from_json,
)
from headwater.cloud.master._health_sample import (
    AgentReport,
    build_sample,
    edge_task_id,
    task_samples,
)
from headwater.common.api import Bolt, Spout, Topology, edge, fields
from headwater.common.health import JsonFileStore
from headwater.common.health._manager import NEVER_APPLIED
from headwater.common.health._model import (
    Action,
    HealthPolicy,
    Mode,
    RevisionOutcome,
    Sample,
)
from headwater.common.wire.proto import runtime_pb2 as pb

from ._packages import topology_package
from .test_master_http import _refused, _run

EXACTLY_ONCE = {"topology.reliability.mode": "EFFECTIVELY_ONCE"}
HEALTH = "/api/v1/topologies/ok/health"


class _S(Spout):
    def next_tuple(self) -> None: ...


class _B(Bolt):
    def process(self, tup: Any) -> None: ...


class FakeDecider:
    """Returns ``actions`` at its first tick (AUTO only), records what became of them."""

    def __init__(self, name: str, policy: HealthPolicy, actions: list[Action]) -> None:
        self.name, self.policy, self.actions = name, policy, actions
        self.samples: list[Sample] = []
        self.outcomes: list[tuple[Action, int | None, str | None]] = []
        self.settled: list[RevisionOutcome] = []

    def set_policy(self, policy: HealthPolicy) -> None:
        self.policy = policy

    def tick(self, sample: Sample) -> list[Action]:
        self.samples.append(sample)
        out = self.actions if self.policy.mode is Mode.AUTO else []
        self.actions = []
        return out

    def applied(self, action: Action, revision: int | None, error: str | None) -> None:
        self.outcomes.append((action, revision, error))

    def settle(self, revisions: Sequence[RevisionOutcome]) -> None:
        self.settled = list(revisions)

    def report(self) -> Any:
        outcomes = self.outcomes

        class R:
            def to_json(self) -> dict[str, Any]:
                return {"mode": "x", "taken": [[a.kind, r, e] for a, r, e in outcomes]}

        return R()


def test_a_sample_reads_the_tasks_counters_and_the_plan() -> None:
    topo = (
        Topology("t")
        .add_spout("src", _S, parallelism=2, placement=edge(site="a"))
        .add_bolt("count", _B, inputs={"src": fields("w")}, parallelism=3)
    )
    view = {
        "tasks": {
            "1": {"component": "count", "container": 0, "executed": 10, "emitted": 20},
            "2": {"component": "src", "executed": 3},  # an edge component's receiver: left out
            "4": {
                "component": "count",
                "executed": 5,
                "received": 7,
                "busy_ns": 1e9,
                "backpressure_ms": 3,
                "in_queue_frames": 2,
                "hot_key:b": 0.2,
                "hot_key:a": 0.5,
                "user:x": 1,
            },
            "5": {"component": "count", "container": 0},  # not reported yet: left out
            "junk": {},
        }
    }
    s = build_sample("t", 3, 12.5, view, topo)
    assert (s.topology, s.revision, s.at) == ("t", 3, 12.5)
    src, count = s.components["src"], s.components["count"]
    assert (src.parallelism, src.source, src.edge, src.inputs) == (2, True, True, ())
    assert (count.parallelism, count.source, count.edge) == (3, False, False)
    assert count.inputs == (("src", "fields"),)
    assert sorted(s.tasks) == [1, 4]
    t = s.tasks[4]
    assert (t.component, t.executed, t.received, t.busy_ns) == ("count", 5, 7, 1e9)
    assert (t.backpressure_ms, t.in_queue_frames) == (3, 2)
    assert t.hot_keys == (("a", 0.5), ("b", 0.2))
    assert s.tasks[1].received == 0.0  # not reported yet: 0
    assert task_samples({}) == {}


def test_a_sample_reads_the_edge_tasks_its_agents_report_not_the_cloud_s_receivers() -> None:
    topo = (
        Topology("t")
        .add_spout("src", _S, placement=edge())
        .add_bolt("slow", _B, inputs={"src": fields("w")}, placement=edge())
        .add_bolt("sink", _B, inputs={"slow": fields("w")})
    )
    view = {  # the cloud's receiver of ``slow``, and the sink
        "tasks": {
            "1": {"component": "slow", "executed": 0},
            "2": {"component": "sink", "executed": 3},
        }
    }

    def agent(busy: float, at: float, up: bool = True, tasks: float = 3) -> AgentReport:
        metrics = {
            "edge_task:t/slow/2:executed": 50.0,
            "edge_task:t/slow/2:busy_ns": busy,
            "edge_task:t/src/1:executed": 0.0,
            "edge_task:t/src/1:emitted": 70.0,
            "edge_task:t/__outbox__slow/3:executed": 50.0,
            "edge_task:t/slow/9:busy_ns": 1.0,  # not reported ``executed``: left out
            "edge_tasks:t": tasks,
            "edge_max_tasks": 4.0,
            "ingest_backlog:t": 20.0,
            "ingest_end:t": 100.0,
            "edge_task:other/slow/2:executed": 1.0,  # another topology's
        }
        return AgentReport(metrics, up, at)

    s = build_sample(
        "t", 1, 10.0, view, topo, {"gw": agent(1e9, 8.0), "gw2": agent(2e9, 9.0, tasks=4)}
    )
    gw, gw2 = edge_task_id("gw", 2), edge_task_id("gw2", 2)
    assert sorted(s.tasks) == sorted(
        [
            2,
            gw,
            gw2,
            edge_task_id("gw", 1),
            edge_task_id("gw2", 1),
            edge_task_id("gw", 3),
            edge_task_id("gw2", 3),
        ]
    )
    assert s.tasks[gw].component == "slow" and s.tasks[gw].busy_ns == 1e9 and s.tasks[gw].at == 8.0
    assert s.tasks[edge_task_id("gw", 1)].emitted == 70.0
    slow = s.components["slow"]
    # gw2 runs one task more than its subgraph's 3: room for 1 ``slow`` task there only
    assert (slow.edge, slow.copies, slow.cap) == (True, 2, 1)
    assert s.components["sink"].cap is None
    assert (s.ingest_backlog, s.backlog_at, s.uplinks_up) == (40.0, 9.0, True)
    assert s.ingest_end == 200.0
    s = build_sample("t", 1, 10.0, view, topo, {"gw": agent(1e9, 8.0, up=False)})
    assert s.uplinks_up is False and s.components["slow"].cap == 2
    s = build_sample("t", 1, 10.0, view, topo)  # no agent reports: as before
    assert sorted(s.tasks) == [2] and s.ingest_backlog is None and s.components["slow"].cap is None


def test_the_policy_is_read_from_config_and_requests_and_a_bad_value_says_what_to_give() -> None:
    assert policy_from_config({}) == HealthPolicy()
    p = policy_from_config(
        {"headwater.health.mode": "recommend", "headwater.health.components": {"c": [1, 4]}}
    )
    assert p.mode is Mode.RECOMMEND and p.bounds("c") == (1, 4)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"mode": "fast"}, "give one of off, recommend, auto"),
        ({"min_parallelism": 5, "max_parallelism": 2}, "give a min no larger than the max"),
        ({"target_utilization": 1.5}, "give a share in (0, 1]"),
        ({"cooldown_s": -1}, "give a number of seconds, 0 or more"),
        ({"speed": 1}, "'speed' is unknown: give one of mode"),
        ({"max_parallelism": 10**9}, "1 to 10000"),
    ]
    for body, says in cases:
        with pytest.raises(ValueError) as err:
            policy_from_json(body, HealthPolicy())
        assert says in str(err.value)


def test_the_state_store_writes_atomically_and_reads_back(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path / "h" / "t.json")
    assert store.load() is None
    store.save({"a": 1})
    assert store.load() == {"a": 1} and not (tmp_path / "h" / "t.json.tmp").exists()
    store.path.write_text("{not json")  # only a hand breaks it: the manager starts afresh
    assert store.load() is None


def _with_fake(master: Master, actions: list[Action]) -> dict[str, FakeDecider]:
    made: dict[str, FakeDecider] = {}

    def make(name: str, policy: HealthPolicy, store: Any) -> FakeDecider:
        made[name] = FakeDecider(name, policy, actions)
        return made[name]

    master.health.make = make
    return made


async def _submit(client: TestClient[Any, Any], tmp_path: Path, config: dict[str, Any]) -> None:
    data = topology_package(tmp_path, "ok", config={**EXACTLY_ONCE, **config})
    resp = await client.post("/api/v1/topologies?entry=topo.py", data=data)
    assert resp.status == 201, await resp.text()


def test_an_auto_rescale_is_applied_as_a_live_edit_by_the_health_manager(tmp_path: Path) -> None:
    rescale = Action("rescale", "count", "count is 95% busy", parallelism=3)

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        made = _with_fake(master, [rescale])
        await _submit(client, tmp_path, {"headwater.health.mode": "auto"})
        done = await master.health.tick("ok")
        assert done == [(rescale, 2, None)]
        assert made["ok"].outcomes == [(rescale, 2, None)]
        # the revisions its edits made, as the history has them, settle what it has pending
        await master.health.tick("ok")
        [ours] = made["ok"].settled
        assert (ours.revision, ours.reason, ours.status) == (2, rescale.reason, "applying")
        rec = master.tms["ok"].revlog.find(2)
        assert rec is not None
        assert (rec.author, rec.reason, rec.diff["replaced"]) == (AUTHOR, rescale.reason, ["count"])
        sample = made["ok"].samples[0]
        assert sample.revision == 1 and sample.components["count"].parallelism == 1
        resp = await client.get("/api/v1/topologies/ok/revisions")
        assert (await resp.json())["revisions"][-1]["reason"] == rescale.reason
        # while the edit is applied (no containers here: it stays so), no sample is taken
        assert master.tms["ok"].revisions[2].record.status == "applying"
        assert await master.health.tick("ok") == [] and len(made["ok"].samples) == 1

    _run(tmp_path, body)


def test_recommend_applies_nothing_and_a_failed_edit_is_reported(tmp_path: Path) -> None:
    bad = Action("rescale", "ghost", "no such component", parallelism=2)

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        made = _with_fake(master, [bad])
        await _submit(client, tmp_path, {"headwater.health.mode": "recommend"})
        assert await master.health.tick("ok") == []
        assert made["ok"].samples and master.tms["ok"].current == 1
        master.health.set_policy("ok", {"mode": "off"})
        await master.health.tick("ok")
        assert len(made["ok"].samples) == 1  # off: not even sampled
        master.health.set_policy("ok", {"mode": "auto"})
        made["ok"].actions = [bad]
        [(_, revision, error)] = await master.health.tick("ok")
        assert revision is None and error is not None and "no component ghost" in error
        assert made["ok"].outcomes == [(bad, None, error)]
        assert master.tms["ok"].current == 1

    _run(tmp_path, body)


def test_the_health_routes_report_and_change_the_policy(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        await _submit(client, tmp_path, {})
        resp = await client.get(HEALTH)
        assert resp.status == 200, await resp.text()
        report = await resp.json()
        assert report["mode"] == "off" and report["policy"]["mode"] == "off"
        resp = await client.put(
            f"{HEALTH}/policy", json={"mode": "recommend", "max_parallelism": 4}
        )
        assert resp.status == 200, await resp.text()
        assert (await resp.json())["max_parallelism"] == 4
        assert (await (await client.get(HEALTH)).json())["mode"] == "recommend"
        saved = json.loads((state / "health" / "ok.policy.json").read_text())
        assert saved["mode"] == "recommend"
        await _refused(await client.put(f"{HEALTH}/policy", json={"mode": "x"}), 400, "give one")
        await _refused(await client.put(f"{HEALTH}/policy", data=b"{"), 400, "send a JSON object")
        await _refused(await client.put(f"{HEALTH}/policy", json=[1]), 400, "send a JSON object")
        await _refused(await client.get("/api/v1/topologies/no/health"), 404, "no topology")
        await _refused(
            await client.put("/api/v1/topologies/no/health/policy", json={}), 404, "no topology"
        )
        viewer = master.tokens.create("viewer")
        auth = {"Authorization": f"Bearer {viewer}"}
        assert (await client.get(HEALTH, headers=auth)).status == 200
        resp = await client.put(f"{HEALTH}/policy", json={"mode": "auto"}, headers=auth)
        assert resp.status == 403
        # a restarted master keeps the operator's policy
        again = Master(state)
        again.tms["ok"] = master.tms["ok"]
        assert again.health.decider("ok").policy.mode is Mode.RECOMMEND
        # a killed topology's health manager is forgotten, its files with it
        await client.delete("/api/v1/topologies/ok")
        await master.health.tick_all()
        assert "ok" not in master.health.deciders
        assert not (state / "health" / "ok.policy.json").exists()

    _run(tmp_path, body)


def test_a_restart_is_a_command_to_the_containers_and_a_report_changes_nothing(
    tmp_path: Path,
) -> None:
    restart = Action("restart", "count", "task 2 is 5x slower", tasks=(2,))
    report = Action("report", "words", "the source is skewed")

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        made = _with_fake(master, [restart, report])
        await _submit(client, tmp_path, {"headwater.health.mode": "auto"})
        sent: list[pb.Command] = []
        master.tms["ok"].broadcast = sent.append  # type: ignore[assignment]
        assert await master.health.tick("ok") == [(restart, None, None), (report, None, None)]
        assert [c.WhichOneof("command") for c in sent] == ["restart_tasks"]
        assert list(sent[0].restart_tasks.tasks) == [2]
        assert sent[0].restart_tasks.reason == restart.reason
        assert len(made["ok"].outcomes) == 2 and master.tms["ok"].current == 1

    _run(tmp_path, body)


# -- the real health manager: an action's outcome is its revision's, over a restart too --------
AUTO = {"headwater.health.mode": "auto", "headwater.health.max_parallelism": 4}


def _load(master: Master, at: float) -> None:
    """The tasks' counters ``at`` s in: words emits 100 records/s and is held back a tenth of
    the time; count, one task, processes them 95% busy (DS2: 2 tasks at 70%)."""
    tm = master.tms["ok"]
    for inst in tm.plan.instances:
        source = inst.component == "words"
        tm.metrics[f"task:{inst.task_id}"] = {
            "executed": 100.0 * at,
            "emitted": 100.0 * at if source else 0.0,
            "received": 0.0 if source else 100.0 * at,
            "busy_ns": (0.1 if source else 0.95) * 1e9 * at,
            "backpressure_ms": 100.0 * at,
        }


async def _two_ticks(master: Master) -> list[tuple[Action, int | None, str | None]]:
    """Two samples 5 s apart on the loop's clock, under that load: what the second did."""
    clock = [0.0]
    master.health.clock = lambda: clock[0]
    _load(master, 10.0)
    assert await master.health.tick("ok") == []  # the first only measures
    clock[0] = 5.0
    _load(master, 15.0)
    return await master.health.tick("ok")


def _taken(master: Master) -> list[tuple[str, int | None, int | None, str]]:
    return [
        (t["action"]["kind"], t["action"]["parallelism"], t["revision"], t["outcome"])
        for t in master.health.report("ok")["taken"]
    ]


def _ours(master: Master) -> list[tuple[int, str]]:
    """The health manager's revisions: (number, status)."""
    recs = master.tms["ok"].revlog.records
    return [(r.revision, r.status.value) for r in recs if r.author == AUTHOR]


async def _restarted(state: Path) -> Master:
    """A master started again on ``state`` (the first one's process died)."""
    again = Master(state)
    await again.resume()
    return again


def test_a_rescale_is_pending_until_its_revision_is_applied_and_then_shows_its_outcome(
    tmp_path: Path,
) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        await _submit(client, tmp_path, AUTO)
        [(action, revision, error)] = await _two_ticks(master)
        assert (action.kind, action.parallelism, revision, error) == ("rescale", 2, 2, None)
        assert _taken(master) == [("rescale", 2, 2, "pending")]  # proposed, not applied yet
        master.tms["ok"].edits.roll_back("container 0 was lost")
        [(_, _, _, outcome)] = _taken(master)  # the report follows the history at once
        assert outcome.startswith("rolled back: container 0 was lost"), outcome
        assert _ours(master) == [(2, "rolled_back")]

    _run(tmp_path, body)


def test_a_master_restarted_while_the_rescale_is_applied_reports_it_rolled_back_once(
    tmp_path: Path,
) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        await _submit(client, tmp_path, AUTO)
        assert [r for _, r, _ in await _two_ticks(master)] == [2]
        again = await _restarted(state)  # revision 2 was being applied: it is rolled back
        try:
            assert _taken(again) == [
                ("rescale", 2, 2, "rolled back: the master restarted during the edit")
            ]
            assert await _two_ticks(again) == []  # its cooldown holds: not repeated
            assert _ours(again) == [(2, "rolled_back")]
        finally:
            for task in again._coordinators.values():
                task.cancel()

    _run(tmp_path, body)


def test_a_master_stopped_before_the_rescale_s_edit_reports_it_never_applied_once(
    tmp_path: Path,
) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        await _submit(client, tmp_path, AUTO)
        started = asyncio.Event()

        async def stuck(*args: Any, **kwargs: Any) -> dict[str, Any]:
            started.set()
            await asyncio.Event().wait()  # the edit is being made when the master stops
            raise AssertionError

        master.health.edit = stuck
        ticking = asyncio.create_task(_two_ticks(master))
        await asyncio.wait_for(started.wait(), 10)
        assert _taken(master) == [("rescale", 2, None, "pending")]  # its edit is being made
        ticking.cancel()
        saved = json.loads((state / "health" / "ok.json").read_text())
        assert [(t["revision"], t["outcome"]) for t in saved["taken"]] == [(None, "pending")]
        again = await _restarted(state)
        try:
            assert _taken(again) == [("rescale", 2, None, NEVER_APPLIED)]
            assert await _two_ticks(again) == []  # its cooldown holds: not repeated
            assert _ours(again) == [] and again.tms["ok"].current == 1
        finally:
            for task in again._coordinators.values():
                task.cancel()

    _run(tmp_path, body)
