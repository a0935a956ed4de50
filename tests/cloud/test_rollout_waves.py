"""A rollout's waves and guards, its check of the model against the step, its records.

The planning of waves and the guards' parsing and judging are pure functions;
the waves, a guard out of bounds and the refusal of a model that does not fit
its scoring step are driven against the fake master of ``test_models.py``
(agents that run what each edit gives them, counters that grow per tick).
"""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from headwater.cloud.master._model_package import models_of
from headwater.cloud.master._rollout import Phase, Rollout, RolloutError, Rollouts
from headwater.cloud.master._rollout_record import load_records
from headwater.common.models._rollout_guards import guards_for, judge, parse_guard
from headwater.common.models._rollout_waves import order_agents, parse_waves, plan_waves
from headwater.common.models._score_spec import SCORE_CONFIG, ScoreSpec
from headwater.common.plan._package_models import entry_problem, pick
from tests._onnx_models import linear

from .test_models import _Cluster


def test_waves_are_planned_cumulatively_canary_first_at_least_one_agent_each() -> None:
    agents = [f"gw-{i}" for i in range(10)]
    ordered = order_agents(agents, ["gw-7"], [a for a in agents if a != "gw-0"])
    assert ordered == [f"gw-{i}" for i in (7, 1, 2, 3, 4, 5, 6, 8, 9, 0)]  # offline last
    plan = plan_waves([10, 50, 100], ordered, already=1)
    assert [(p, len(a)) for p, a in plan] == [(10, 2), (50, 5), (100, 10)]
    assert plan[0][1] == ["gw-7", "gw-1"]
    two = plan_waves([10, 50, 100], ["a", "b"])  # one agent, then both; 100 kept
    assert two == [(10, [("a")]), (50, ["a", "b"]), (100, ["a", "b"])]
    assert plan_waves([100], ["a", "b"]) == [(100, ["a", "b"])]
    assert parse_waves("10, 50%,100") == [10.0, 50.0, 100.0]
    for bad, says in (
        ("10,50", "the last wave must be 100"),
        ("50,10,100", "must grow"),
        ("ten,100", "cumulative percentages"),
        ("0,100", "above 0"),
    ):
        with pytest.raises(ValueError, match=says):
            parse_waves(bad)


def test_guards_parse_judge_and_default() -> None:
    g = parse_guard(" score_us / scored <= 500 ")
    assert (g.counter, g.per, g.bound, g.text()) == (
        "score_us",
        "scored",
        500.0,
        "score_us/scored<=500",
    )
    for bad in ("errors", "errors<0", "errors<=-1", "errors<=x", "a b<=1", "x/x<=1", "errors>=1"):
        with pytest.raises(ValueError, match=r"guard|bound|ratio"):
            parse_guard(bad)
    assert guards_for([], True, 0.2, 0) == ["errors<=0", "anomalies/scored<=0.2"]
    assert guards_for(["errors<=3", "score_us/scored<=500"], False, 0.2, 0) == [
        "errors<=3",
        "score_us/scored<=500",
    ]
    growth = {"errors": 0.0, "scored": 200.0, "score_us": 30_000.0, "out_of_range": 30.0}
    values, why = judge(["errors<=0", "score_us/scored<=500", "out_of_range/scored<=0.1"], growth)
    assert [(v["guard"], v["value"], v["ok"]) for v in values] == [
        ("errors<=0", 0.0, True),
        ("score_us/scored<=500", 150.0, True),
        ("out_of_range/scored<=0.1", 0.15, False),
    ]
    assert why == "out_of_range/scored 0.150 above 0.1"
    values, why = judge(["errors<=0"], {"scored": 0.0}, must_grow="scored")
    assert "counted no scored" in why and values[0]["ok"]
    _, why = judge(["anomalies/scored<=0.2"], {})
    assert why == "anomalies/scored: no scored in the window, nothing to judge by"


def test_an_entry_picks_a_wave_by_agent_id() -> None:
    sha = "a" * 64
    entry: dict[str, Any] = {
        "name": "m",
        "default": None,
        "canary": {
            "agents": ["gw-a"],
            "version": 2,
            "sha256": sha,
            "kind": "onnx/1",
            "range": [0, 1],
        },
    }
    assert entry_problem(entry) is None
    assert pick(entry, {}, "gw-a") == {
        "name": "m",
        "version": 2,
        "sha256": sha,
        "kind": "onnx/1",
        "range": [0, 1],
    }
    assert pick(entry, {}, "gw-b") is None and pick(entry, {}) is None
    assert "selector" in str(entry_problem({**entry, "canary": {"version": 2, "sha256": sha}}))
    bad = {**entry, "canary": {**entry["canary"], "agents": []}}
    assert entry_problem(bad) == "canary.agents must be a non-empty list of agent ids"
    bad = {**entry, "canary": {**entry["canary"], "range": [2, 1]}}
    assert "range" in str(entry_problem(bad))


def test_old_records_load_and_unknown_fields_are_dropped(tmp_path: Path) -> None:
    old = {  # as the master before waves and guards wrote it
        "id": 1, "model": "m", "version": 1, "topology": "t", "component": "c",
        "canary": None, "watch_s": 6.0, "max_anomaly_rate": 0.2, "max_errors": 0,
        "kind": "rollout", "phase": "done", "steps": [], "previous": None, "target": None,
        "edited": True, "figures": {"scored": 10.0}, "error": "",
    }  # fmt: skip
    path = tmp_path / "rollouts.json"
    path.write_text(json.dumps([old, {**old, "id": 2, "from_the_future": 1}]))
    one, two = load_records(path)
    assert (one.phase, one.waves, one.guards, one.stages) == (Phase.DONE, [100.0], [], [])
    assert two.id == 2 and "from_the_future" not in two.view()
    path.write_text('{"not": "records"}')
    assert load_records(path) == [] and (tmp_path / "rollouts.corrupt").exists()


def _go(rollouts: Rollouts, *args: Any, **kw: Any) -> Rollout:
    async def go() -> Rollout:
        view = rollouts.start(*args, **kw)
        while rollouts._tasks:
            await asyncio.sleep(0)
        return next(r for r in rollouts.records if r.id == view["id"])

    return asyncio.run(go())


def test_waves_go_agent_by_agent_and_an_offline_agent_is_not_waited_for(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path, anomaly_rate=0.05, sites="abcd")
    cluster.offline.add("gw-d")
    rollouts = cluster.rollouts(tmp_path)
    r = _go(rollouts, "m", 1, "t", "count", {"site": "a"}, watch_s=2.0, waves=[25, 60, 100])
    assert r.phase is Phase.DONE, r.error
    # the canary (gw-a); 25%: one agent more; 60%: 3 of 4, online ones first; then all
    assert [live["gw-a"] for live in cluster.live] == [1.0, 1.0, 1.0, 1.0]
    assert [live["gw-b"] for live in cluster.live] == [0.0, 1.0, 1.0, 1.0]
    assert [live["gw-c"] for live in cluster.live] == [0.0, 0.0, 1.0, 1.0]
    assert [s["stage"] for s in r.stages] == ["canary", "wave 1 (25%)", "wave 2 (60%)"]
    assert r.stages[2]["agents"] == ["gw-a", "gw-b", "gw-c"]
    assert [(g["guard"], g["value"], g["ok"]) for g in r.stages[2]["guards"]] == [
        ("errors<=0", 0.0, True),
        ("anomalies/scored<=0.2", 0.05, True),
    ]
    wave = models_of(cluster.packages.get(cluster.tm.records[4].package), "topo.py")["count"]
    assert wave["canary"]["agents"] == ["gw-a", "gw-b", "gw-c"]  # gw-d: offline, last
    assert cluster.nodes.records["gw-d"].status.metrics.get("model:t/count") is None


def test_a_wave_out_of_its_guard_rolls_back(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path, sites="ab", on_new={"out_of_range": 40.0})
    rollouts = cluster.rollouts(tmp_path)
    r = _go(
        rollouts, "m", 1, "t", "count", watch_s=2.0, waves=[50, 100],
        guards=["out_of_range/scored<=0.1"],
    )  # fmt: skip
    assert r.phase is Phase.ROLLED_BACK
    assert r.error == "wave 1 (50%): out_of_range/scored 0.400 above 0.1"
    assert r.stages[0]["ok"] is False and r.stages[0]["guards"][-1]["value"] == 0.4
    assert [live["gw-a"] for live in cluster.live] == [1.0, 0.0]  # the wave, then back
    assert [live["gw-b"] for live in cluster.live] == [0.0, 0.0]


def test_a_model_that_does_not_fit_its_step_is_refused_before_any_edit(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path)
    rollouts = cluster.rollouts(tmp_path)
    asyncio.run(rollouts.registry.register("v", linear(), {"output_range": [0, 10]}))
    package, entry, _ = rollouts._current("t")

    def step(config: dict[str, str]) -> None:
        component = SimpleNamespace(name="count", config=config, placement=None)
        cluster._described[(package, entry)] = SimpleNamespace(components=[component])

    step({SCORE_CONFIG: ScoreSpec("v", ("a", "b")).doc()})  # two inputs; the model takes 3
    with pytest.raises(RolloutError, match=r"'features' tensor\(float\)\[batch, 3\] takes 3") as e:
        rollouts.start("v", 1, "t", "count")
    assert e.value.status == 409
    with pytest.raises(RolloutError, match="scoring step scores onnx/1") as e:
        rollouts.start("m", 1, "t", "count")  # the JSON kind onto a scoring step
    step({})
    with pytest.raises(RolloutError, match="has no scoring step") as e:
        rollouts.start("v", 1, "t", "count")
    assert e.value.status == 409
    assert cluster.tm.current == 1 and rollouts.records == []  # no edit, no record

    step({SCORE_CONFIG: ScoreSpec("v", ("a", "b", "c")).doc()})  # fits: ONNX goes out
    r = _go(rollouts, "v", 1, "t", "count", watch_s=1.0)
    assert r.phase is Phase.DONE, r.error
    assert (r.guards, r.must_grow, r.model_kind) == (["errors<=0"], "scored", "onnx/1")
    shipped = cluster.packages.get(cluster.tm.records[2].package)
    pick_ = models_of(shipped, "topo.py")["count"]["default"]
    assert (pick_["kind"], pick_["range"]) == ("onnx/1", [0.0, 10.0])
    names = zipfile.ZipFile(io.BytesIO(shipped)).namelist()
    assert f"models/{pick_['sha256']}.onnx" in names
