"""Scoring cost: the IoT pipeline without a model, with the JSON model, with an ONNX model.

The IoT bench pipeline (``bench/iot``: parse -> valid -> key by sensor -> 10 s window ->
stats -> flag) on a LocalCluster at maximum rate, in the variants of
``bench/scoring_topology.py``, one after the other in each of ``--runs`` repetitions
(medians): ``base`` as it is; ``json`` with the JSON anomaly model judging each reading
in a map step; ``hop`` with a ``score`` step whose package ships no model (its own
component and hop, no model run); ``onnx`` with that step scoring with a scikit-learn
``LinearRegression`` on the reading's ``value`` and ``seq`` exported with skl2onnx, and
``trees`` with a ``GradientBoostingRegressor`` (20 trees of depth 3) instead, each model
shipped in the package as a rollout ships it (``headwater_models.json``,
``models/<sha256>.onnx``).

A model's cost per record in the pipeline is ``(1/throughput - 1/throughput_base) x
1e6`` µs (and, for the ONNX models, against ``hop``: the model's part apart from its
component's hop). Every run is checked: the same windows, readings and anomalies as the
Python floor's, and every valid reading scored once (none for ``base`` and ``hop``); the
score step's counters (``scored``, ``score_us``) are read from the cluster before it stops.

In process, without the runtime: ``Scorer.run`` on frames of ``--frames`` rows (µs per
row), the score step's own work on a frame (read each record's row, one run, write each
record), against ``AnomalyModel.flag`` per record and the json variant's map function.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from bench.iot import functions as iot
from bench.peer_kit import read_batches
from bench.peer_run import Sampler, wait_file
from bench.scoring_topology import INPUTS, MODEL, VARIANTS, JsonAnomaly
from headwater.cloud.local import LocalCluster

RESULTS = Path(__file__).with_name("results") / "scoring.json"
TOPOLOGY = "from bench.scoring_topology import build\n\ntopology = build()\n"
SCORED = ("json", "onnx", "trees")  # the variants whose every valid reading has a score


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--size", type=int, default=300_000, help="readings per run")
    p.add_argument("--runs", type=int, default=3, help="repetitions of each variant")
    p.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma-separated, of {','.join(VARIANTS)}",
    )
    p.add_argument("--frames", default="1,100,1000", help="in process: rows per model run")
    p.add_argument("--out", type=Path, default=RESULTS)


def make_models(seed: int = 3) -> dict[str, bytes]:
    """The ONNX models, fitted on 5,000 made-up readings' (value, seq) to their value (what
    they compute does not matter here, only what scoring them costs)."""
    import numpy as np
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(seed)
    x = np.c_[rng.normal(20, 2, 5000), rng.integers(0, 10**6, 5000)].astype(np.float32)
    y = 0.9 * x[:, 0] + 1e-6 * x[:, 1] + rng.normal(0, 0.1, 5000)
    models: dict[str, bytes] = {}
    for name, est in (
        ("onnx", LinearRegression()),
        ("trees", GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=seed)),
    ):
        est.fit(x, y)
        onx = to_onnx(
            est,
            initial_types=[("features", FloatTensorType([None, len(INPUTS)]))],
            target_opset={"": 17, "ai.onnx.ml": 3},
        )
        models[name] = onx.SerializeToString()
    return models


def json_artifact() -> bytes:
    """The JSON anomaly model (``gated-linear/1``), as the tests make it."""
    from tests._artifacts import artifact

    return artifact()


def write_package(folder: Path, variant: str, models: dict[str, bytes]) -> Path:
    """The variant's package folder: its topology file and, for an ONNX variant, the model
    as a rollout ships it. Returns the topology file."""
    folder.mkdir(parents=True)
    topo = folder / "topo.py"
    topo.write_text(TOPOLOGY)
    if variant in models:
        data = models[variant]
        sha = hashlib.sha256(data).hexdigest()
        (folder / "models").mkdir()
        (folder / "models" / f"{sha}.onnx").write_bytes(data)
        entry = {"name": MODEL, "kind": "onnx/1", "default": {"version": 1, "sha256": sha}}
        (folder / "headwater_models.json").write_text(json.dumps({"score": entry}))
    return topo


def one_run(
    topo: Path, env: dict[str, str], size: int, readings: int, work: Path
) -> dict[str, Any]:
    """One run of a variant: throughput, CPU, the sink's summary, the score step's counters
    (``readings``: the valid ones, each of which it must count)."""
    out = work / f"{env['BENCH_SCORING']}-{time.monotonic_ns()}.json"
    env = {**env, "BENCH_OUT": str(out), "BENCH_RATE": "0.0"}
    sampler = Sampler()
    sampler.start()
    counters: dict[str, float] = {}
    try:
        cluster = LocalCluster(topo, containers=1, env=env)
        cluster.start()
        try:
            _opened(cluster)
            cpu0 = _cpu_s()
            Path(f"{out}.go").touch()
            result = wait_file(out, 600)
            cpu = _cpu_s()
            cpu_us = sum(t - cpu0.get(pid, 0.0) for pid, t in cpu.items()) / size * 1e6
            if env["BENCH_SCORING"] != "base":
                counters = _score_counters(cluster, env["BENCH_SCORING"], readings)
        finally:
            cluster.stop()
    finally:
        sampler.stop.set()
        sampler.join()
    start = float(Path(f"{out}.start").read_text())
    return {
        "per_s": round(size / (result["end"] - start)),
        "summary": {k: v for k, v in result.items() if k != "end"},
        "cpu_us_per_reading": round(cpu_us, 3),
        "counters": counters,
        "processes": sampler.report(),
    }


def _cpu_s() -> dict[int, float]:
    """CPU seconds (user + system) of every process under this one, by pid."""
    out: dict[int, float] = {}
    for p in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
    return out


def _opened(cluster: LocalCluster, timeout: float = 60) -> None:
    """Wait until every task has opened: each reports its first metrics (``executed``,
    every second) from its loop, after ``open``."""
    expected = {str(i.task_id) for i in cluster.plan.instances}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tasks = cluster.metrics()["tasks"]
        if all("executed" in tasks.get(t, {}) for t in expected):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the tasks did not all open within {timeout:.0f} s")


def _score_counters(cluster: LocalCluster, variant: str, expect: int) -> dict[str, float]:
    """The scoring component's counters (``score`` or ``anomaly``), once they count
    ``expect`` (they are reported every second), or as they are after 30 s."""
    name = "anomaly" if variant == "json" else "score"
    want = "user:unscored" if variant == "hop" else "user:scored"
    deadline = time.monotonic() + 30
    got: dict[str, float] = {}
    while time.monotonic() < deadline:
        tasks = cluster.metrics()["tasks"].values()
        got = next((m for m in tasks if m.get("component") == name), {})
        if variant == "json" or got.get(want) == expect:
            break
        time.sleep(0.5)
    keys = ("user:scored", "user:unscored", "user:score_us", "dead_letters")
    return {k.removeprefix("user:"): got[k] for k in keys if k in got}


def check(variant: str, run: dict[str, Any], floor: dict[str, Any]) -> str | None:
    """Why the run is not a correct one, or None."""
    s = run["summary"]
    same = {k: s.get(k) for k in ("records", "readings", "anomalies")}
    if same != {k: floor[k] for k in same}:
        return f"results {same} differ from the floor's {floor}"
    want = floor["readings"] if variant in SCORED else 0
    if s["scored"] != want:
        return f"{s['scored']} readings carried a score; expected {want}"
    c = run["counters"]
    if variant in ("onnx", "trees") and c.get("scored") != floor["readings"]:
        return f"the score step counted {c.get('scored')} scored; expected {floor['readings']}"
    if variant == "hop" and c.get("unscored") != floor["readings"]:
        return f"the score step counted {c.get('unscored')} unscored; expected {floor['readings']}"
    if c.get("dead_letters"):
        return f"{c['dead_letters']} dead letters"
    return None


def _floor(data: Path, work: Path) -> dict[str, Any]:
    out = work / "floor.json"
    cmd = [sys.executable, "-m", "bench.iot.floor", str(data), str(out)]
    subprocess.run(cmd, check=True, timeout=600)
    return {k: v for k, v in json.loads(out.read_text()).items() if k not in ("start", "end")}


def _us_per(fn: Callable[[], Any], records: int, repeats: int = 5) -> float:
    """The median over ``repeats`` of ``fn``'s time per record (µs); ``fn`` handles
    ``records`` records per call."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) / records * 1e6, 3)


def _frame_costs(
    scorer: Any, frame: list[dict[str, Any]], read: Any, write: Any, per: int
) -> dict[str, float]:
    """µs per record of ``Scorer.run`` on ``frame``'s rows, and of the score step's work on
    it (read each record's row, one run, write each record), over about ``per`` records."""
    rows = [read(r) for r in frame]
    calls = max(1, per // len(frame))

    def model_only() -> None:
        for _ in range(calls):
            scorer.run(rows)

    def step() -> None:
        for _ in range(calls):
            scores = scorer.run([read(r) for r in frame])
            for r, s in zip(frame, scores, strict=True):
                write(r, s, "1")

    return {
        "run_us_per_record": _us_per(model_only, calls * len(frame)),
        "step_us_per_record": _us_per(step, calls * len(frame)),
    }


def in_process(
    data: Path, models: dict[str, bytes], artifact: Path, frames: list[int]
) -> dict[str, Any]:
    """µs per record of each model, in this process: ``Scorer.run`` alone and the score
    step's work on a frame, per frame size; ``AnomalyModel.flag`` and the json map step."""
    from headwater.common.dsl._score import row_reader, writer
    from headwater.common.models import ScoreSpec
    from headwater.common.models._scorer import load_scorer

    readings: list[dict[str, Any]] = []
    for batch in read_batches(data):
        readings.extend(r for r in map(iot.parse, batch) if r is not None and iot.valid(r))
        if len(readings) >= max(frames) * 10:
            break
    per = 20_000  # records per timed call
    spec = ScoreSpec(MODEL, INPUTS, "score", None)
    read, write = row_reader(INPUTS, len(INPUTS)), writer("score", "model_version")
    out: dict[str, Any] = {}
    for name, model in models.items():
        scorer = load_scorer(model, spec)
        runs = {str(f): _frame_costs(scorer, readings[:f], read, write, per) for f in frames}
        out[name] = runs
    flagger = JsonAnomaly(str(artifact))
    sample = readings[:per]
    prevs = [[r["value"], r["value"]] for r in sample]
    anomaly = flagger.model

    def flag_only() -> None:
        for r, p in zip(sample, prevs, strict=True):
            anomaly.flag(r["sensor"], p, r["value"])

    def map_step() -> None:
        for r in sample:
            flagger(r)

    out["json"] = {
        "flag_us_per_record": _us_per(flag_only, len(sample)),
        "map_step_us_per_record": _us_per(map_step, len(sample)),
    }
    return out


def run(args: argparse.Namespace) -> int:
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants or set(variants) - set(VARIANTS) or args.runs < 1:
        print(f"--variants takes {', '.join(VARIANTS)} (comma-separated); --runs 1 or more")
        return 2
    frames = [int(f) for f in args.frames.split(",")]
    work = Path(tempfile.mkdtemp(prefix="hw-bench-scoring-"))
    data = work / "data.msgpack"
    iot.make_data(data, args.size)
    floor = _floor(data, work)
    models = make_models()
    artifact = work / "iot-anomaly.json"
    artifact.write_bytes(json_artifact())
    topos = {v: write_package(work / f"pkg-{v}", v, models) for v in variants}
    base_env = {
        "BENCH_DATA": str(data),
        "BENCH_EXPECT": str(floor["records"]),
        "BENCH_JSON_MODEL": str(artifact),
        "PYTHONPATH": os.pathsep.join(
            p
            for p in (str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH"))
            if p
        ),
    }
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for i in range(args.runs):
        for v in variants if i % 2 == 0 else list(reversed(variants)):
            r = one_run(
                topos[v], {**base_env, "BENCH_SCORING": v}, args.size, floor["readings"], work
            )
            wrong = check(v, r, floor)
            print(
                f"run {i + 1} {v}: {r['per_s']:,} readings/s, "
                f"{r['cpu_us_per_reading']} CPU µs a reading; {r['counters']}",
                flush=True,
            )
            if wrong:
                raise RuntimeError(f"{v}, run {i + 1}: {wrong}")
            runs[v].append(r)
    medians = {v: statistics.median(r["per_s"] for r in rs) for v, rs in runs.items()}
    cpu = {v: statistics.median(r["cpu_us_per_reading"] for r in rs) for v, rs in runs.items()}
    result: dict[str, Any] = {
        "size": args.size,
        "floor": floor,
        "median_per_s": medians,
        "us_per_record": _costs(medians),
        "median_cpu_us_per_reading": cpu,
        "cpu_us_per_record": {
            k: round(cpu[a] - cpu[b], 3) for k in _costs(medians) for a, b in [k.split(" - ")]
        },
        "score_us_per_scored": {
            v: round(
                statistics.median(r["counters"]["score_us"] / r["counters"]["scored"] for r in rs),
                3,
            )
            for v, rs in runs.items()
            if v in ("onnx", "trees")
        },
        "in_process": in_process(data, models, artifact, frames),
        "model_bytes": {k: len(v) for k, v in models.items()},
        "load": os.getloadavg(),
        "runs": runs,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _costs(medians: dict[str, float]) -> dict[str, float]:
    """Each variant's cost per record over ``base`` (and, for an ONNX one, over ``hop``)."""
    out: dict[str, float] = {}
    for v, per_s in medians.items():
        for ref in ("base", "hop"):
            if ref in medians and v != ref and not (ref == "hop" and v in ("base", "json")):
                out[f"{v} - {ref}"] = round((1 / per_s - 1 / medians[ref]) * 1e6, 3)
    return out
