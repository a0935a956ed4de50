"""Issue 33, acceptances 1 and 2: ONNX models of two makers rolled out canary first to two
agents, scored on the edge as they score offline; a misfit refused, a guard rolled back.

A master, a worker and two agents (site0, site1) run the energy example, whose edge
``predict`` step (a ``ScoreBolt``) scores every reading with the ``energy-next-kwh``
version rolled out to its agent, and whose cloud half lands each reading with its
prediction and the version that made it; meters publish through a real Mosquitto all
along. The models are trained before the cluster starts, on the example's readings
(``energy_data``: each reading's kwh and voltage -> its meter's next kwh): a
scikit-learn tree (exported with skl2onnx) and a Spark MLlib linear regression in a
pipeline behind a ``VectorAssembler`` (real PySpark, exported with onnxmltools), both
through ``headwater.models.to_onnx`` and registered with ``headwater models register``.

- v1 (scikit-learn) goes to site0 first, watched, then to both, by the example README's command;
- v2 (four inputs where the step gives two) is refused before any agent switches;
- v3 (MLlib) goes to site1 first, then to both;
- v4 (its metadata says its scores lie in [100, 101]; they do not) goes to site0, whose
  guard ``out_of_range/scored<=0.05`` fails: rolled back to v3 on both agents.

Every reading lands exactly once, and each landed prediction is what the version its
row names computes offline from that reading (scikit-learn's ``predict``, Spark's
``transform``), to float32 tolerance; a row before the first rollout is unscored.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors import read_landing
from headwater.models import to_onnx

from ..cloud.spark._spark import GATEWAY_SOCKET, spark_session
from ._daemons import Daemons
from ._support import EXAMPLES, wait_for
from .test_edge_cloud import SITES, Sensors, SteadySensors, _node
from .test_model_rollout import _cli, submit_to_both

pytestmark = [pytest.mark.cluster, GATEWAY_SOCKET]
ENERGY = EXAMPLES / "energy"
PIPELINE = ENERGY / "energy_pipeline.py"
MODEL = "energy-next-kwh"
METERS, COUNT = 3, 2_000
RATE = 40.0  # messages per second, both sites together

sys.path.insert(0, str(ENERGY))
import energy_data  # noqa: E402  (the example's own module, beside its topology)

sys.path.remove(str(ENERGY))
Key = tuple[str, int]  # (meter_id, seq)


def _examples() -> tuple[list[Key], list[list[float]], list[float]]:
    """Every reading's key and row ``[kwh, voltage]``, and the label of the ones that have a
    next reading (the first ``len(labels)`` rows)."""
    keys, rows, labels = [], [], []
    tail: list[tuple[Key, list[float]]] = []
    for s in range(len(SITES)):
        for m in range(METERS):
            readings = [energy_data.reading(s, m, seq) for seq in range(COUNT)]
            for a, b in pairwise(readings):
                keys.append((a["meter_id"], a["seq"]))
                rows.append([a["kwh"], a["voltage"]])
                labels.append(b["kwh"])
            last = readings[-1]
            tail.append(((last["meter_id"], last["seq"]), [last["kwh"], last["voltage"]]))
    keys += [k for k, _ in tail]
    rows += [r for _, r in tail]
    return keys, rows, labels


def _train(tmp_path: Path) -> tuple[dict[str, Path], dict[str, dict[Key, float]]]:
    """The four models' ONNX files and, per version, every reading's offline prediction."""
    from sklearn.linear_model import LinearRegression
    from sklearn.tree import DecisionTreeRegressor

    keys, rows, labels = _examples()
    fit_rows = rows[: len(labels)]
    tree = DecisionTreeRegressor(max_depth=5, random_state=0).fit(fit_rows, labels)
    wide = LinearRegression().fit([[*r, r[0] * 2, 1.0] for r in fit_rows], labels)
    linear = LinearRegression().fit(fit_rows, labels)
    files = {v: tmp_path / f"v{v}.onnx" for v in ("1", "2", "3", "4")}
    files["1"].write_bytes(to_onnx(tree))
    files["2"].write_bytes(to_onnx(wide))
    files["4"].write_bytes(to_onnx(linear))
    offline = {
        "1": dict(zip(keys, map(float, tree.predict(rows)), strict=True)),
        "4": dict(zip(keys, map(float, linear.predict(rows)), strict=True)),
    }
    with spark_session("onnx-rollout") as spark:
        from pyspark.ml import Pipeline
        from pyspark.ml.feature import VectorAssembler
        from pyspark.ml.regression import LinearRegression as SparkLinear

        train = spark.createDataFrame(
            [(r[0], r[1], y) for r, y in zip(fit_rows, labels, strict=False)],
            "kwh double, voltage double, label double",
        )
        mllib = Pipeline(
            stages=[
                VectorAssembler(inputCols=["kwh", "voltage"], outputCol="features"),
                SparkLinear(featuresCol="features", labelCol="label", regParam=0.01),
            ]
        ).fit(train)
        files["3"].write_bytes(to_onnx(mllib, spark=spark))
        every = spark.createDataFrame(
            [(k[0], k[1], r[0], r[1]) for k, r in zip(keys, rows, strict=True)],
            "meter_id string, seq long, kwh double, voltage double",
        )
        got = mllib.transform(every).select("meter_id", "seq", "prediction").collect()
        offline["3"] = {(r["meter_id"], r["seq"]): float(r["prediction"]) for r in got}
    return files, offline


def _live(daemons: Daemons, site: str) -> float | None:
    live = _node(daemons, f"gw-{site}")["metrics"].get("model:energy/predict")
    return None if live is None else float(live)


def _both_live(daemons: Daemons, version: float) -> None:
    """Wait until both agents report ``version`` live: a rollout waits only for the agents
    online at each step (one whose session is being re-made under load takes the newest
    revision when it is back), and the master's view of an agent is its latest report."""
    wait_for(
        lambda: _live(daemons, "site0") == _live(daemons, "site1") == version,
        30,
        f"v{version:g} live on both agents",
    )


def _revisions(daemons: Daemons) -> list[int]:
    got = daemons.api("/api/v1/topologies/energy/revisions")["revisions"]
    return [int(r["revision"]) for r in got]


def _rows(out: Path) -> list[dict[str, Any]]:
    if not (out / "landing" / "meters").exists():
        return []
    return read_landing(out / "landing", "meters")


def _readme_rollout() -> str:
    """The example's README's rollout command, as written."""
    lines = (ENERGY / "README.md").read_text().splitlines()
    (line,) = [x for x in lines if x.startswith(f"headwater models rollout {MODEL} 1 ")]
    return line


def _rollout(daemons: Daemons, version: str, *more: str) -> subprocess.CompletedProcess[str]:
    return _cli(
        daemons,
        *("models", "rollout", MODEL, version, "--topology", "energy"),
        *("--component", "predict", "--watch", "5", *more),
    )


@pytest.mark.timeout(900)
def test_onnx_models_roll_out_canary_first_and_score_as_offline(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    files, offline = _train(tmp_path)
    out = tmp_path / "out"
    daemons.start_master()
    daemons.start_worker("w1", env={"ENERGY_OUT": str(out)})
    host, port = mosquitto
    for site in SITES:
        daemons.start_agent(
            f"gw-{site}",
            *("--master", daemons.grpc, "--label", f"site={site}"),
            *("--mqtt", f"{host}:{port}", "--topic", f"meters/{site}/#"),
        )
    submit_to_both(daemons, PIPELINE, "energy")
    # v1..v4 registered in order; v4's metadata expects scores in [100, 101]
    for v in ("1", "2", "3", "4"):
        meta = {"dataset": "energy_data", "output_range": [100.0, 101.0]} if v == "4" else {}
        reg = _cli(
            daemons,
            *("models", "register", str(files[v]), "--name", MODEL, "--meta", json.dumps(meta)),
        )
        assert reg.returncode == 0 and f"version {v} (onnx/1" in reg.stdout, reg.stderr

    messages = list(energy_data.messages(len(SITES), METERS, COUNT))
    publisher = SteadySensors(Sensors(*mosquitto), messages, RATE)
    try:
        publisher.start()
        wait_for(lambda: _rows(out), 60, "the first readings landed")
        assert _live(daemons, "site0") is None  # nothing rolled out: readings unscored

        # scikit-learn, canary site0 first, then both: the example's README's command
        res = _cli(daemons, *shlex.split(_readme_rollout())[1:])
        assert res.returncode == 0, res.stdout + res.stderr
        for step in ("requested", "canary live", "watching", "all live"):
            assert step in res.stdout, res.stdout
        _both_live(daemons, 1.0)

        # four inputs onto a step that gives two: refused before any edit
        before = _revisions(daemons)
        res = _rollout(daemons, "2", "--canary", "site=site1")
        assert res.returncode != 0, res.stdout
        assert "takes 4 values per row; the step gives 2" in res.stderr, res.stderr
        assert _revisions(daemons) == before
        assert _live(daemons, "site0") == _live(daemons, "site1") == 1.0

        # Spark MLlib, canary site1 first, then both
        res = _rollout(daemons, "3", "--canary", "site=site1")
        assert res.returncode == 0, res.stdout + res.stderr
        _both_live(daemons, 3.0)

        # scores outside the range its metadata gives: the canary's guard rolls it back
        res = _rollout(
            daemons, "4", "--canary", "site=site0", "--guard", "out_of_range/scored<=0.05"
        )
        assert res.returncode == 1, res.stdout + res.stderr
        assert "out_of_range/scored" in res.stdout and "rolled back" in res.stdout, res.stdout
        rollouts = daemons.api(f"/api/v1/models/{MODEL}/rollouts")
        assert [r["phase"] for r in rollouts] == ["done", "done", "rolled_back"]
        _both_live(daemons, 3.0)
        landed = len(_rows(out))
        wait_for(lambda: len(_rows(out)) > landed + 120, 60, "readings after it")
    finally:
        publisher.stop.set()
        publisher.join(30)
        publisher.sensors.close()

    sent = messages[: sum(publisher.sent.values())]
    readings = {
        json.dumps(r).encode(): (r["meter_id"], r["seq"])
        for s in range(len(SITES))
        for m in range(METERS)
        for r in (energy_data.reading(s, m, seq) for seq in range(COUNT))
    }
    want = {readings[p] for _, p in sent if p in readings}  # not the malformed ones
    wait_for(lambda: len(_rows(out)) >= len(want), 120, "every reading landed")
    rows = _rows(out)
    keys = [(r["meter_id"], r["seq"]) for r in rows]
    assert len(keys) == len(set(keys)), "a reading landed twice"
    assert set(keys) == want, "a reading missing"
    by_version: dict[str, int] = {}
    for r, key in zip(rows, keys, strict=True):
        v = r["model_version"]
        by_version[v] = by_version.get(v, 0) + 1
        if v == "":
            assert r["predicted_kwh"] is None, r
            continue
        assert r["predicted_kwh"] == pytest.approx(offline[v][key], rel=1e-5, abs=1e-6), r
    assert set(by_version) == {"", "1", "3", "4"}, by_version  # v4 ran on the canary only
    sites_of = {v: {r["site"] for r in rows if r["model_version"] == v} for v in by_version}
    assert sites_of["4"] == {"site0"} and sites_of["1"] == sites_of["3"] == set(SITES)
