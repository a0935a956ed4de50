"""Model rollout time on real daemons: request -> canary live -> all live, and a plain replace.

    python -m bench spark-rollout --runs 5

``headwater demo``'s processes (``headwater._demo.run.Demo``): a master, a
cloud worker, two agents (site0, site1), Mosquitto (the embedded broker when
it is not installed) and the six sensors publishing, the IoT example running.
Once readings have landed, ``--runs`` x 2 model versions (``tests/_artifacts``:
valid ``gated-linear/1`` artifacts, no Spark) are uploaded
(``POST /api/v1/models/iot-anomaly``, as ``headwater models upload``) and rolled
out to ``iot/anomaly`` one after the other, alternating: with ``--canary
site=site0`` and without a canary (one edit for both agents), each with
``watch_s`` = ``--watch`` (0: the watch's fixed wait left out; a real rollout
adds it between canary live and the promotion). Per rollout, from the steps'
times in ``GET /api/v1/models/iot-anomaly/rollouts`` (the master's clock):
request -> canary live, canary live -> all live, request -> all live; and the
client's POST -> seeing ``done``. For reference, ``--runs`` plain live
``replace`` edits of the same component with the demo's own package
(``POST /api/v1/topologies/iot/revisions?action=replace``): POST -> the revision
``applied``. Writes ``bench/results/spark_rollout.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from headwater._demo.run import PIPELINE, Demo, get_json, wait_until
from headwater.common._package import build_package
from headwater.common.connectors import manifests
from tests._artifacts import artifact

RESULTS = Path(__file__).with_name("results") / "spark_rollout.json"
MODEL = "iot-anomaly"
FINAL = ("done", "rolled_back", "failed")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=5, help="rollouts of each kind, and replaces")
    p.add_argument("--watch", type=float, default=0.0, help="the rollouts' watch_s")
    p.add_argument("--out", default=str(RESULTS))


def _call(demo: Demo, method: str, path: str, body: bytes | None = None) -> Any:
    req = urllib.request.Request(
        f"{demo.http}{path}",
        data=body,
        method=method,
        headers={"Authorization": f"Bearer {demo.token}"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def _rollout(demo: Demo, version: int, canary: bool, watch: float) -> dict[str, Any]:
    body: dict[str, Any] = {
        "version": version,
        "topology": "iot",
        "component": "anomaly",
        "watch_s": watch,
        "max_anomaly_rate": 1.0,
    }
    if canary:
        body["canary"] = {"site": "site0"}
    t0 = time.time()
    rid = _call(demo, "POST", f"/api/v1/models/{MODEL}/rollouts", json.dumps(body).encode())["id"]

    def final() -> dict[str, Any] | None:
        every = get_json(f"{demo.http}/api/v1/models/{MODEL}/rollouts", demo.token)
        r: dict[str, Any] = next(x for x in every if x["id"] == rid)
        return r if r["phase"] in FINAL else None

    r = wait_until(final, f"rollout {rid}", timeout=300 + watch)
    seen = time.time()
    if r["phase"] != "done":
        raise RuntimeError(f"rollout {rid} ended {r['phase']}: {r['error']}")
    steps = r["steps"]
    at = {"requested": steps[0]["at"]}
    for s in steps:
        if s["note"] == "canary live":
            at["canary_live"] = s["at"]
        if s["phase"] == "promoting" and s["note"] == "edit made":
            at["promote_edit"] = s["at"]
        if s["note"] == "all live" and s["phase"] == "promoting":
            at["all_live"] = s["at"]
    row = {
        "id": rid,
        "version": version,
        "canary": canary,
        "request_to_all_live_s": round(at["all_live"] - at["requested"], 3),
        "promote_edit_to_all_live_s": round(at["all_live"] - at["promote_edit"], 3),
        "post_to_done_seen_s": round(seen - t0, 3),
        "load_average": round(os.getloadavg()[0], 2),
        "steps": steps,
    }
    if canary:
        row["request_to_canary_live_s"] = round(at["canary_live"] - at["requested"], 3)
        row["canary_live_to_all_live_s"] = round(at["all_live"] - at["canary_live"], 3)
    return row


def _replace(demo: Demo, data: bytes, entry: str) -> dict[str, Any]:
    revs = get_json(f"{demo.http}/api/v1/topologies/iot/revisions", demo.token)
    query = {"action": "replace", "base": revs["current"], "entry": entry}
    query["components"] = "anomaly"
    t0 = time.time()
    rev = _call(demo, "POST", f"/api/v1/topologies/iot/revisions?{urlencode(query)}", data)[
        "revision"
    ]

    def status() -> str:
        recs = get_json(f"{demo.http}/api/v1/topologies/iot/revisions", demo.token)["revisions"]
        s: str = next(r for r in recs if r["revision"] == rev)["status"]
        return "" if s == "applying" else s

    outcome = wait_until(status, f"revision {rev}", timeout=300)
    if outcome != "applied":
        raise RuntimeError(f"revision {rev} {outcome}")
    return {
        "revision": rev,
        "post_to_applied_s": round(time.time() - t0, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return round(float(statistics.median(float(r[key]) for r in rows)), 3)


def run(args: argparse.Namespace) -> int:
    demo = Demo(Path(tempfile.mkdtemp(prefix="hw-bench-rollout-")))
    rollouts: list[dict[str, Any]] = []
    replaces: list[dict[str, Any]] = []
    try:
        demo.start()
        wait_until(
            lambda: sum(m["rows"] for m in manifests(demo.out / "landing", "readings")) > 0,
            "readings landing",
            timeout=180,
        )
        for i in range(2 * args.runs):
            up = _call(
                demo,
                "POST",
                f"/api/v1/models/{MODEL}",
                artifact(threshold=6.0 + i / 10, created_at=float(i + 1)),
            )
            row = _rollout(demo, up["version"], i % 2 == 0, args.watch)
            rollouts.append(row)
            print(
                json.dumps({k: v for k, v in row.items() if k != "steps"}),
                flush=True,
            )
        data, entry = build_package(str(PIPELINE))
        for _ in range(args.runs):
            row = _replace(demo, data, entry)
            replaces.append(row)
            print(json.dumps(row), flush=True)
    finally:
        demo.stop()
    canary = [r for r in rollouts if r["canary"]]
    plain = [r for r in rollouts if not r["canary"]]
    summary = {
        "canary": {
            k: _median(canary, k)
            for k in (
                "request_to_canary_live_s",
                "canary_live_to_all_live_s",
                "request_to_all_live_s",
                "post_to_done_seen_s",
            )
        },
        "no_canary": {
            k: _median(plain, k) for k in ("request_to_all_live_s", "post_to_done_seen_s")
        },
        "plain_replace": {"post_to_applied_s": _median(replaces, "post_to_applied_s")},
    }
    print(json.dumps(summary, indent=2))
    doc = {
        "cpus": os.cpu_count(),
        "runs": args.runs,
        "watch_s": args.watch,
        "broker": "Mosquitto"
        if shutil.which("mosquitto") or os.path.exists("/usr/sbin/mosquitto")
        else "embedded (amqtt)",
        "workdir": str(demo.work),
        "summary": summary,
        "rollouts": rollouts,
        "replaces": replaces,
    }
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0
