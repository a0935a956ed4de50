"""The model routes attacked: odd versions, deep JSON, names, targets (issue 16).

Every bad request is a 4xx with ``{"error": ...}``, never a 500, and leaves
nothing half-made. Driven through the real app (``make_app``) with a master of
the test's own; the rollout's targets against the fake cluster of
``test_models``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from headwater.cloud.master._master import Master
from headwater.cloud.master._models_openapi import rollout_schema
from headwater.cloud.master._rollout import Phase, RolloutError
from headwater.common.api import Placement, edge
from tests import _onnx_models

from .test_models import _artifact, _Cluster, _drive, _phases, _refused, _run

_TARGET = {"topology": "t", "component": "c"}


def test_a_version_out_of_range_is_a_4xx(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        assert (await client.post("/api/v1/models/m", data=_artifact())).status == 201
        rollouts = "/api/v1/models/m/rollouts"
        for version in (10**9, 10**30, 10**400):
            resp = await client.post(rollouts, data=json.dumps({"version": version, **_TARGET}))
            await _refused(resp, 400, "version")
        # a path version: ASCII digits, 1 to 999999999 (not '²', not 5000 digits)
        for text in ("%C2%B2", "%D9%A1", "9" * 5000, "0", "01", "-1", "1.0"):
            await _refused(await client.get(f"/api/v1/models/m/{text}"), 404, "version")
        assert (await client.get("/api/v1/models/m/1")).status == 200
        assert master.models.meta("m", 1)["version"] == 1
        assert master.rollouts.records == []

    _run(tmp_path, body)


def test_json_nested_too_deep_is_a_400(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        for deep in (b"[" * 100_000, b'{"a":' * 100_000):
            for path in ("/api/v1/models/m/rollouts", "/api/v1/models/m/rollback"):
                await _refused(await client.post(path, data=deep), 400, "JSON object")
            await _refused(await client.post("/api/v1/tokens", data=deep), 400, "send JSON")
        assert master.rollouts.records == []

    _run(tmp_path, body)


def _placed(cluster: _Cluster, **placements: Placement) -> None:
    """Describe the fake cluster's current revision with these component placements."""
    rec = cluster.tm.records[cluster.tm.current]
    cluster._described[(rec.package, rec.entry)] = SimpleNamespace(
        components=[SimpleNamespace(name=n, placement=p, config={}) for n, p in placements.items()]
    )


def test_a_cloud_component_or_a_canary_off_its_placement_is_refused(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path)
    rollouts = cluster.rollouts(tmp_path)
    _placed(cluster, words=edge(), count=Placement())

    async def refused(**kw: Any) -> str:
        try:
            rollouts.start("m", 1, "t", "count", **kw)
        except RolloutError as exc:
            return f"{exc.status} {exc}"
        raise AssertionError("accepted")

    assert asyncio.run(refused()).startswith("400 component 'count' of 't' runs in the cloud")
    _placed(cluster, words=edge(), count=edge(site="a"))  # count runs on gw-a only
    said = asyncio.run(refused(canary={"site": "b"}))
    assert said.startswith("409 no agent running 't' matches the canary selector")
    assert rollouts.records == [] and cluster.tm.current == 1  # nothing made
    assert not (tmp_path / "rollouts.json").exists()


def test_an_agent_the_component_is_not_placed_on_is_not_waited_for(tmp_path: Path) -> None:
    """gw-b runs other components of 't' but not 'count': it never reports a model, and a
    rollout that waited for it would time out and roll back."""
    cluster = _Cluster(tmp_path, anomaly_rate=0.05)
    rollouts = cluster.rollouts(tmp_path)
    rollouts.live_timeout_s = 5.0
    _placed(cluster, words=edge(), count=edge(site="a"))
    original = cluster.edit

    async def edit_on_a(*args: Any) -> dict[str, Any]:
        out = await original(*args)
        del cluster.nodes.records["gw-b"].status.metrics["model:t/count"]  # not placed there
        _placed(cluster, words=edge(), count=edge(site="a"))
        return out

    cluster.edit = edit_on_a  # type: ignore[method-assign,assignment]
    r = _drive(cluster, rollouts, watch_s=2.0)
    assert r.phase is Phase.DONE, r.error
    assert _phases(r)[-1] == ("done", "all live")


def test_a_topology_killed_during_the_edit_fails_with_its_reason(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path)
    rollouts = cluster.rollouts(tmp_path)
    cluster.tm.edit = SimpleNamespace(revision=9)  # another edit under way...
    sleep = cluster.sleep

    async def killed(s: float) -> None:
        await sleep(s)
        cluster.tms.pop("t", None)  # ...and the topology is killed meanwhile

    rollouts.sleep = killed
    r = _drive(cluster, rollouts)
    assert r.phase is Phase.FAILED
    assert r.error == "the edit was refused: topology 't' was killed"


def test_a_canary_of_another_model_than_the_one_running_is_refused(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path, anomaly_rate=0.05)
    rollouts = cluster.rollouts(tmp_path)
    assert _drive(cluster, rollouts, watch_s=1.0).phase is Phase.DONE  # 'm' v1 runs now
    asyncio.run(rollouts.registry.upload("other", _artifact(5.0, name="other")))
    with pytest.raises(
        RolloutError, match="runs model 'm': a canary or wave of 'other'"
    ) as refused:
        rollouts.start("other", 1, "t", "count", canary={"site": "a"})
    assert refused.value.status == 409 and len(rollouts.records) == 1


def test_a_corrupt_rollout_record_is_kept_aside_and_the_master_starts(tmp_path: Path) -> None:
    (tmp_path / "rollouts.json").write_text('[{"id": 1, "model": ')
    rollouts = _Cluster(tmp_path).rollouts(tmp_path)
    assert rollouts.records == []
    assert (tmp_path / "rollouts.corrupt").read_text() == '[{"id": 1, "model": '


def test_metadata_with_an_infinite_number_or_a_bad_output_range_is_refused(
    tmp_path: Path,
) -> None:
    """1e400 parses as inf, which the registry would serve as ``Infinity`` (not JSON: the
    console's reader fails on it); an output_range no rollout can use is refused at once."""

    async def body(client: TestClient[Any, Any], master: Master) -> None:
        model = _onnx_models.linear()
        for meta, says in (
            ('{"auc": 1e400}', "the metadata has a number too large for JSON (e.g. 1e400)"),
            ('{"output_range": [-1e400, 1]}', "the metadata has a number too large for JSON"),
            ('{"output_range": "0..1"}', "the metadata's output_range is 0..1; it must be"),
            ('{"output_range": [1, 0]}', "the metadata's output_range is [1, 0]; it must be"),
            ('{"output_range": [0, true]}', "the metadata's output_range is [0, True]; it"),
        ):
            resp = await client.post("/api/v1/models/m/versions", params={"meta": meta}, data=model)
            await _refused(resp, 400, says)
        assert (await client.get("/api/v1/models")).status == 200
        assert await (await client.get("/api/v1/models")).json() == []
        meta = '{"output_range": [-1.5, 2]}'
        resp = await client.post("/api/v1/models/m/versions", params={"meta": meta}, data=model)
        assert resp.status == 201, await resp.text()
        assert master.models.meta("m", 1)["metadata"] == {"output_range": [-1.5, 2]}

    _run(tmp_path, body)


def test_the_openapi_bounds_of_a_rollout_body_are_the_ones_the_master_keeps(
    tmp_path: Path,
) -> None:
    """Each bound the document gives: the value on it passes the checks (and meets no
    topology: 404), the value past it is a 400."""
    props = rollout_schema({})["properties"]

    async def body(client: TestClient[Any, Any], master: Master) -> None:
        assert (await client.post("/api/v1/models/m", data=_artifact())).status == 201

        async def status(**kw: Any) -> int:
            sent = json.dumps({"version": 1, **_TARGET, **kw})
            return (await client.post("/api/v1/models/m/rollouts", data=sent)).status

        for key in ("version", "watch_s", "max_anomaly_rate", "max_errors"):
            low, high = props[key]["minimum"], props[key].get("maximum")
            assert (await status(**{key: low}), await status(**{key: low - 1})) == (404, 400)
            if high is not None:
                assert (await status(**{key: high}), await status(**{key: high + 1})) == (404, 400)
        waves, item = props["waves"], props["waves"]["items"]
        assert (item["minimum"], item["exclusiveMinimum"], item["maximum"]) == (0, True, 100)
        assert await status(waves=[0, 100]) == 400
        most = [10 * (i + 1) for i in range(waves["maxItems"])]
        assert most[-1] == 100 and await status(waves=most) == 404
        assert await status(waves=[1, *most]) == 400
        assert await status(waves=[]) == 400 and waves["minItems"] == 1
        assert props["canary"]["minProperties"] == 1
        assert (await status(canary={"site": "a"}), await status(canary={})) == (404, 400)
        guards = [f"c{i}<=1" for i in range(props["guards"]["maxItems"])]
        assert await status(guards=guards) == 404
        assert await status(guards=[*guards, "x<=1"]) == 400

    _run(tmp_path, body)
