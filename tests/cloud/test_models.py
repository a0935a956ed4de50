"""The master's model registry and the packages a rollout builds (issue 16).

The registry is driven through the real app (``make_app``) with a master of the
test's own and no node: uploads are versioned and bounded, every bad request
is a 4xx with a JSON reason. The package a rollout builds carries the models
file and the artifacts it names, and loading its topology puts each
component's entry in its config; the component's pick and the artifact's
hash check are checked here too.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from headwater.cloud.master._master import Master
from headwater.cloud.master._model_package import models_of, package_with
from headwater.cloud.master._models import MAX_MODEL_BYTES, ModelRegistry
from headwater.cloud.master._rollout import Phase, Rollout, Rollouts
from headwater.common._exceptions import HeadwaterError
from headwater.common._package import PackageStore, build_package, check_package
from headwater.common.plan import load_topology
from headwater.common.plan._package_models import (
    MODEL_CONFIG,
    PackageModelError,
    model_bytes,
    pick,
)
from headwater.common.runtime.instance import LABELS_ENV, TOPOLOGY_FILE_ENV
from headwater.common.wire._states import RevisionStatus
from headwater.models import live_model
from tests._artifacts import artifact

from ._packages import topology_source
from .test_master_http import _run as _run_http


def _artifact(threshold: float = 5.0, name: str = "m") -> bytes:
    return artifact(threshold, name)


def _run(tmp_path: Path, body: Any) -> None:
    """``body(client, master)`` against a master's REST API with an admin token."""
    _run_http(tmp_path, lambda client, master, _state: body(client, master))


async def _refused(resp: Any, status: int, says: str) -> None:
    assert resp.status == status, await resp.text()
    assert says in (await resp.json())["error"]


def test_uploads_are_versioned_and_read_back_as_uploaded(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        one, two = _artifact(5.0), _artifact(7.0) + b"\n"
        for n, data in ((1, one), (2, two)):
            resp = await client.post("/api/v1/models/iot-anomaly", data=data)
            assert resp.status == 201
            assert await resp.json() == {
                "name": "iot-anomaly",
                "version": n,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        assert await (await client.get("/api/v1/models")).json() == [
            {"name": "iot-anomaly", "latest": 2}
        ]
        shown = await (await client.get("/api/v1/models/iot-anomaly")).json()
        assert [(v["version"], v["size"], v["kind"]) for v in shown["versions"]] == [
            (1, len(one), "gated-linear/1"),
            (2, len(two), "gated-linear/1"),
        ]
        assert shown["running"] == []
        meta = await (await client.get("/api/v1/models/iot-anomaly/2")).json()
        assert meta["sha256"] == hashlib.sha256(two).hexdigest()
        raw = await client.get("/api/v1/models/iot-anomaly/2?artifact=1")
        assert await raw.read() == two
        assert await (await client.get("/api/v1/models/iot-anomaly/rollouts")).json() == []
        # a restarted master reads the same registry
        again = Master(master.state_dir)
        assert [v["version"] for v in again.models.versions("iot-anomaly")] == [1, 2]

    _run(tmp_path, body)


def test_every_bad_request_is_a_4xx_with_a_reason(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        post = client.post
        await _refused(await post("/api/v1/models/m", data=b"not json"), 400, "not valid JSON")
        await _refused(await post("/api/v1/models/m", data=b""), 400, "empty")
        await _refused(await post("/api/v1/models/m", data=b"[1]"), 400, "an object with format")
        big = b" " * (MAX_MODEL_BYTES + 1)
        assert (await post("/api/v1/models/m", data=io.BytesIO(big))).status == 413
        await _refused(await post("/api/v1/models/a%20b", data=_artifact()), 400, "model name")
        await _refused(await client.get("/api/v1/models/m"), 404, "no model named")
        await _refused(await client.get("/api/v1/models/m/1"), 404, "has no version 1")
        assert (await post("/api/v1/models/m", data=_artifact())).status == 201
        await _refused(await client.get("/api/v1/models/m/7"), 404, "no version 7")
        await _refused(await client.get("/api/v1/models/m/x"), 404, "version")
        rollouts = "/api/v1/models/m/rollouts"
        await _refused(await post(rollouts, data=b"{"), 400, "JSON object")
        await _refused(await post(rollouts, json={"version": 1}), 400, "topology")
        target = {"topology": "t", "component": "c"}
        await _refused(await post(rollouts, json={**target, "version": 0}), 400, "version")
        await _refused(await post(rollouts, json={**target, "version": 9}), 404, "no version 9")
        bad = {**target, "version": 1, "canary": {"site": 1}}
        await _refused(await post(rollouts, json=bad), 400, "canary")
        await _refused(await post(rollouts, json={**target, "version": 1}), 404, "no topology")
        await _refused(await post("/api/v1/models/m/rollback", json=target), 404, "no topology")
        assert [p.name for p in (master.state_dir / "models" / "m").iterdir()] != []
        assert sorted(p.name for p in (master.state_dir / "models").iterdir()) == ["m"]

    _run(tmp_path, body)


def test_a_viewer_may_read_models_but_not_upload_or_roll_out(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        viewer = master.tokens.create("viewer")
        operator = master.tokens.create("operator")
        as_viewer = {"Authorization": f"Bearer {viewer}"}
        as_operator = {"Authorization": f"Bearer {operator}"}
        assert (await client.get("/api/v1/models", headers=as_viewer)).status == 200
        up = await client.post("/api/v1/models/m", data=_artifact(), headers=as_operator)
        assert up.status == 403  # an upload is an admin's
        roll = await client.post("/api/v1/models/m/rollouts", json={}, headers=as_viewer)
        assert roll.status == 403

    _run(tmp_path, body)


def _source(tmp_path: Path) -> tuple[bytes, str]:
    folder = tmp_path / "src"
    folder.mkdir(parents=True)
    (folder / "topo.py").write_text(topology_source("t"))
    return build_package(folder / "topo.py")


def _unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_a_rollout_package_carries_the_models_file_and_only_the_artifacts_it_names(
    tmp_path: Path,
) -> None:
    data, entry = _source(tmp_path)
    one, two = _artifact(5.0), _artifact(7.0)
    sha1, sha2 = hashlib.sha256(one).hexdigest(), hashlib.sha256(two).hexdigest()
    canary = {
        "name": "m",
        "default": {"version": 1, "sha256": sha1},
        "canary": {"selector": {"site": "a"}, "version": 2, "sha256": sha2},
    }
    first = package_with(data, entry, "count", canary, {sha1: one, sha2: two})
    assert first == package_with(data, entry, "count", canary, {sha1: one, sha2: two})
    check_package(first)
    files = _unzip(first)
    assert files["topo.py"] == _unzip(data)["topo.py"]
    assert files[f"models/{sha1}.json"] == one and files[f"models/{sha2}.json"] == two
    assert models_of(first, entry) == {"count": canary}
    # promoted: version 2 everywhere; version 1's artifact is dropped
    promoted = {"name": "m", "default": {"version": 2, "sha256": sha2}, "canary": None}
    second = package_with(first, entry, "count", promoted, {})
    assert sorted(_unzip(second)) == ["headwater_models.json", f"models/{sha2}.json", "topo.py"]

    code = tmp_path / "code"
    code.mkdir()
    for name, content in _unzip(first).items():
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        (code / name).write_bytes(content)
    topology = load_topology(code / entry)
    assert json.loads(topology.component("count").config[MODEL_CONFIG]) == canary
    assert MODEL_CONFIG not in topology.component("words").config
    assert pick(canary, {"site": "a"}) == {"name": "m", "version": 2, "sha256": sha2}
    assert pick(canary, {"site": "b"}) == {"name": "m", "version": 1, "sha256": sha1}
    assert pick({**canary, "default": None}, {"site": "b"}) is None
    assert model_bytes(code, sha2) == two
    (code / "models" / f"{sha2}.json").write_bytes(one)
    with pytest.raises(PackageModelError, match="altered"):
        model_bytes(code, sha2)


def test_a_rollout_package_keeps_onnx_artifacts_as_onnx_beside_json_ones(
    tmp_path: Path,
) -> None:
    from tests import _onnx_models

    data, entry = _source(tmp_path)
    doc, onnx = _artifact(5.0), _onnx_models.linear()
    sha_doc, sha_onnx = hashlib.sha256(doc).hexdigest(), hashlib.sha256(onnx).hexdigest()
    first = package_with(
        data,
        entry,
        "count",
        {"name": "m", "kind": "onnx/1", "default": {"version": 1, "sha256": sha_onnx}},
        {sha_onnx: onnx},
    )
    both = package_with(
        first,
        entry,
        "words",
        {"name": "a", "default": {"version": 1, "sha256": sha_doc}},
        {sha_doc: doc},
    )
    files = _unzip(both)
    assert files[f"models/{sha_onnx}.onnx"] == onnx  # kept from the package it was in
    assert files[f"models/{sha_doc}.json"] == doc
    assert sorted(files) == [
        "headwater_models.json",
        f"models/{sha_onnx}.onnx",
        f"models/{sha_doc}.json",
        "topo.py",
    ]
    code = tmp_path / "code"
    for name, content in files.items():
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        (code / name).write_bytes(content)
    assert model_bytes(code, sha_onnx) == onnx and model_bytes(code, sha_doc) == doc
    (code / "models" / f"{sha_onnx}.onnx").write_bytes(onnx[:-1])
    with pytest.raises(PackageModelError, match=f"model file {sha_onnx}.onnx hashes to"):
        model_bytes(code, sha_onnx)


def test_the_anomaly_step_loads_its_model_or_refuses_to_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, bad = _artifact(5.0), _artifact(-1.0)
    sha_good, sha_bad = hashlib.sha256(good).hexdigest(), hashlib.sha256(bad).hexdigest()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / f"{sha_good}.json").write_bytes(good)
    (tmp_path / "models" / f"{sha_bad}.json").write_bytes(bad)
    monkeypatch.setenv(TOPOLOGY_FILE_ENV, str(tmp_path / "topo.py"))
    monkeypatch.setenv(LABELS_ENV, json.dumps({"site": "a"}))
    entry = {
        "name": "m",
        "default": {"version": 1, "sha256": sha_good},
        "canary": {"selector": {"site": "a"}, "version": 2, "sha256": sha_bad},
    }
    assert live_model({}) == (None, "")
    with pytest.raises(HeadwaterError, match=r"threshold: -1\.0 is below 0\.0"):
        live_model({MODEL_CONFIG: json.dumps(entry)})
    monkeypatch.setenv(LABELS_ENV, json.dumps({"site": "b"}))
    model, version = live_model({MODEL_CONFIG: json.dumps(entry)})
    assert version == "1" and model is not None
    assert model.flag("s", [20.0, 20.0], 26.0) and not model.flag("s", [20.0, 20.0], 24.0)
    assert model.flag("s", None, 100.0) and not model.flag("s", None, 21.0)  # the level


def test_a_restart_mid_rollout_fails_safe(tmp_path: Path) -> None:
    """An unfinished rollout that made no edit is marked failed after a restart (one that
    made an edit is rolled back: the integration test drives that path)."""
    master = Master(tmp_path / "state")
    r = Rollout(1, "m", 1, "t", "c", {"site": "a"})
    r.phase = Phase.CANARY
    master.rollouts.records.append(r)
    master.rollouts._save()
    again = Master(tmp_path / "state")

    async def resume() -> None:
        again.rollouts.resume()

    asyncio.run(resume())
    (rec,) = again.rollouts.records
    assert rec.phase is Phase.FAILED and "restarted" in rec.error
    assert isinstance(again.rollouts, Rollouts)


# -- the rollout's state machine, against a fake master and a fake clock ------------------
class _Rec:
    def __init__(self, package: str, entry: str) -> None:
        self.package, self.entry, self.error = package, entry, ""
        self.status = RevisionStatus.APPLIED


class _Cluster:
    """A master as a rollout sees it: one topology 't' whose component 'count' runs the
    models, agents (``gw-a`` on site a, ``gw-b`` on site b, ...) that run what each edit
    gives them, unless told to fail it, and score 100 readings per 0.25 s with
    ``anomaly_rate`` flagged, plus ``on_new`` counters while they run version 1."""

    def __init__(
        self,
        tmp_path: Path,
        fail_on: str = "",
        anomaly_rate: float = 0.0,
        sites: str = "ab",
        on_new: dict[str, float] | None = None,
    ) -> None:
        data, entry = _source(tmp_path)
        self.packages = PackageStore(tmp_path / "packages")
        tm = SimpleNamespace(
            current=1, edit=None, records={1: _Rec(self.packages.put(data), entry)}
        )
        tm.revlog = SimpleNamespace(find=tm.records.get)
        self.tm = tm
        self.tms = {"t": tm}
        self.deployments = {"t": SimpleNamespace(agents=[f"gw-{s}" for s in sites])}
        records = {
            f"gw-{s}": SimpleNamespace(
                info=SimpleNamespace(labels={"site": s}), status=SimpleNamespace(metrics={})
            )
            for s in sites
        }
        self.nodes = SimpleNamespace(records=records, online=lambda agent: True)
        self._described: dict[Any, Any] = {}
        self.fail_on, self.anomaly_rate, self.on_new = fail_on, anomaly_rate, on_new or {}
        self.now = 0.0
        self.offline: set[str] = set()
        self.nodes.online = lambda agent: agent not in self.offline
        self.live: list[dict[str, float]] = []  # each edit: the version each agent runs

    def described(self, package: str, entry: str) -> Any:
        return self._described.get((package, entry))

    async def edit(
        self,
        name: str,
        action: str,
        base: int,
        data: bytes,
        entry: str,
        components: list[str],
        author: str,
    ) -> dict[str, Any]:
        assert (name, action, base, components) == ("t", "replace", self.tm.current, ["count"])
        n = self.tm.current + 1
        self.tm.records[n] = _Rec(self.packages.put(data), entry)
        self.tm.current = n
        models = models_of(data, entry)["count"]
        for agent, node in self.nodes.records.items():
            if agent == self.fail_on and models.get("canary"):
                node.status.metrics["revision_failed:t"] = float(n)
                continue
            if agent in self.offline:
                continue
            chosen = pick(models, node.info.labels, agent)
            node.status.metrics["model:t/count"] = float(chosen["version"] if chosen else 0)
            node.status.metrics["revision:t"] = float(n)
        self.live.append(
            {a: n.status.metrics.get("model:t/count", 0.0) for a, n in self.nodes.records.items()}
        )
        return {"revision": n}

    def agent_revisions(self, name: str) -> dict[str, int]:
        return {
            agent: int(node.status.metrics["revision:t"])
            for agent, node in self.nodes.records.items()
            if "revision:t" in node.status.metrics
        }

    async def sleep(self, s: float) -> None:
        self.now += s
        for node in self.nodes.records.values():
            m = node.status.metrics
            m["component:t/count:user:scored"] = m.get("component:t/count:user:scored", 0) + 100
            flagged = m.get("component:t/count:user:anomalies", 0) + 100 * self.anomaly_rate
            m["component:t/count:user:anomalies"] = flagged
            if m.get("model:t/count") == 1.0:
                for name, n in self.on_new.items():
                    key = f"component:t/count:user:{name}"
                    m[key] = m.get(key, 0) + n

    def rollouts(self, tmp_path: Path) -> Rollouts:
        registry = ModelRegistry(tmp_path / "models")
        asyncio.run(registry.upload("m", _artifact(5.0)))
        return Rollouts(
            self,  # type: ignore[arg-type]
            registry,
            tmp_path / "rollouts.json",
            sleep=self.sleep,
            clock=lambda: self.now,
        )


def _drive(cluster: _Cluster, rollouts: Rollouts, **kw: Any) -> Rollout:
    async def go() -> Rollout:
        view = rollouts.start("m", 1, "t", "count", **kw)
        while rollouts._tasks:
            await asyncio.sleep(0)
        return next(r for r in rollouts.records if r.id == view["id"])

    return asyncio.run(go())


def _phases(r: Rollout) -> list[tuple[str, str]]:
    return [(s["phase"], s["note"]) for s in r.steps]


def test_a_canary_within_bounds_goes_to_every_agent(tmp_path: Path) -> None:
    cluster = _Cluster(tmp_path, anomaly_rate=0.05)
    rollouts = cluster.rollouts(tmp_path)
    r = _drive(cluster, rollouts, canary={"site": "a"}, watch_s=5.0, max_anomaly_rate=0.1)
    assert r.phase is Phase.DONE, r
    assert [p for p, _ in _phases(r)] == [
        "requested",
        "canary",
        "canary",
        "watching",
        "promoting",
        "promoting",
        "done",
    ]
    assert r.figures["anomaly_rate"] == 0.05 and r.figures["scored"] == 2000
    entry = models_of(cluster.packages.get(cluster.tm.records[3].package), "topo.py")
    assert entry["count"]["default"]["version"] == 1 and entry["count"]["canary"] is None

    # a rollback returns to the hand-set logic (what ran before)
    async def back() -> None:
        rollouts.rollback("m", "t", "count")
        while rollouts._tasks:
            await asyncio.sleep(0)

    asyncio.run(back())
    assert rollouts.records[-1].phase is Phase.DONE
    assert cluster.nodes.records["gw-a"].status.metrics["model:t/count"] == 0.0


def test_a_canary_out_of_bounds_or_failing_rolls_back(tmp_path: Path) -> None:
    noisy = _Cluster(tmp_path / "noisy", anomaly_rate=0.5)
    r = _drive(noisy, noisy.rollouts(tmp_path / "noisy"), canary={"site": "a"}, watch_s=5.0)
    assert r.phase is Phase.ROLLED_BACK and r.error == "canary: anomalies/scored 0.500 above 0.2"
    assert {n.status.metrics["model:t/count"] for n in noisy.nodes.records.values()} == {0.0}

    broken = _Cluster(tmp_path / "broken", fail_on="gw-a")
    r = _drive(broken, broken.rollouts(tmp_path / "broken"), canary={"site": "a"})
    assert r.phase is Phase.ROLLED_BACK
    assert "revision 2 failed on agent gw-a" in r.error
    assert "promoting" not in [p for p, _ in _phases(r)]
