"""Issue 16, acceptance 3: a model rolled out to two agents canary first, a bad one rolled back;
issue 33: the same in waves, a guard out of bounds on the first wave rolled back.

A master, a worker and two agents (site0, site1) run the IoT example, whose
anomaly step runs the model its package names and whose cloud half lands every
reading with the version that flagged it (``$IOT_OUT/landing/readings``);
sensors publish through a real Mosquitto all along. A good model goes to
site0 first, then to both; a model this edge cannot load (it raises on load)
is rolled back; ``headwater models rollback`` returns to the hand-set
detector. Every reading lands exactly once, and each landed flag is what the
model version named in its row computes from the reading and the previous one.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from headwater._demo.linkproxy import LinkProxy
from headwater.common.connectors import read_landing
from headwater.common.models import load_model
from tests._artifacts import artifact

from .._iot import iot_steps as steps
from ._daemons import Daemons
from ._support import EXAMPLES, wait_for
from .test_edge_cloud import SITES, Sensors, SteadySensors, _agent_args, _node

pytestmark = pytest.mark.cluster
TOPOLOGY = EXAMPLES / "iot" / "pipeline.py"
MODEL = "iot-anomaly"
SENSORS_PER_SITE = 3
RATE = 40.0  # readings per second, both sites together


def _messages(n: int) -> list[tuple[str, bytes]]:
    """Readings round-robin over the sites' sensors: a slow wave, a spike every 37th."""
    out = []
    sensors = [(site, f"{site}-s{k}") for k in range(SENSORS_PER_SITE) for site in SITES]
    for i in range(n):
        site, sensor = sensors[i % len(sensors)]
        seq = i // len(sensors)
        value = 20.0 + 2.0 * math.sin(seq / 7.0) + (15.0 if seq % 37 == 36 else 0.0)
        reading = {"site": site, "sensor": sensor, "seq": seq, "ts": 1_000 * i, "value": value}
        out.append((f"sensors/{site}/{sensor}", json.dumps(reading).encode()))
    return out


def _cli(daemons: Daemons, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "headwater", *args),
            *("--master", daemons.http, "--token", daemons.token),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def submit_to_both(daemons: Daemons, topology: Path, name: str) -> None:
    """Once the worker and both agents are online, submit ``topology`` (named ``name``) and
    wait until both agents' uplinks are open."""
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 3,
        30,
        "the worker and both agents online",
    )
    daemons.cli("submit", str(topology))
    wait_for(
        lambda: all(
            _node(daemons, f"gw-{s}")["uplinks"].get(name, {}).get("connected") for s in SITES
        ),
        60,
        "both agents' uplinks open",
    )


def _rows(out: Path) -> list[dict[str, Any]]:
    """The readings the example landed, each with its flag and the model version that set it."""
    if not (out / "landing" / "readings").exists():
        return []
    return read_landing(out / "landing", "readings")


def _plant(state: Path, version: int, data: bytes) -> None:
    """A registry version as the master keeps one (a registry written by a newer master,
    say, with a model kind this edge's loader does not take)."""
    folder = state / "models" / MODEL
    (folder / f"{version}.json").write_bytes(data)
    meta = {
        "name": MODEL,
        "version": version,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "created_at": time.time(),
        "kind": "gated-linear/1",
        "trained": None,
        "evaluation": None,
    }
    (folder / f"{version}.meta.json").write_text(json.dumps(meta))


def _live(daemons: Daemons, site: str) -> float | None:
    live = _node(daemons, f"gw-{site}")["metrics"].get("model:iot/anomaly")
    return None if live is None else float(live)


@pytest.mark.timeout(900)
def test_canary_rollout_then_all_a_bad_model_rolls_back_every_reading_once(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    daemons.start_master()
    daemons.start_worker("w1", env={"IOT_OUT": str(out)})
    for site in SITES:
        daemons.start_agent(f"gw-{site}", *_agent_args(mosquitto, site, daemons.grpc))
    submit_to_both(daemons, TOPOLOGY, "iot")
    messages = _messages(int(RATE * 600))
    sensors = Sensors(*mosquitto)
    publisher = SteadySensors(sensors, messages, RATE)
    try:
        publisher.start()
        wait_for(lambda: _rows(out), 60, "the first readings landed")

        # a good model: uploaded, refused when it is not an artifact at all
        good = artifact(threshold=6.0)
        (tmp_path / "good.json").write_bytes(good)
        (tmp_path / "junk.json").write_bytes(b"not json")
        up = _cli(daemons, "models", "upload", MODEL, str(tmp_path / "good.json"))
        assert up.returncode == 0 and "version 1" in up.stdout, up.stdout + up.stderr
        junk = _cli(daemons, "models", "upload", MODEL, str(tmp_path / "junk.json"))
        assert junk.returncode == 2 and "not valid JSON" in junk.stderr, junk.stderr
        assert _live(daemons, "site0") is None  # no model shipped yet

        # canary first: site0, watched, then both
        res = _cli(
            daemons,
            *("models", "rollout", MODEL, "1", "--topology", "iot"),
            *("--component", "anomaly", "--canary", "site=site0", "--watch", "6"),
            "--max-anomaly-rate",
            "0.5",
        )
        assert res.returncode == 0, res.stdout + res.stderr
        for step in ("requested", "canary", "canary live", "watching", "all live"):
            assert step in res.stdout, res.stdout
        assert _live(daemons, "site0") == _live(daemons, "site1") == 1.0

        # a model that raises on load on the edge: the canary's replace fails, rolled back
        _plant(tmp_path / "master", 2, artifact(threshold=-1.0, created_at=2.0))
        res = _cli(
            daemons,
            *("models", "rollout", MODEL, "2", "--topology", "iot"),
            *("--component", "anomaly", "--canary", "site=site0", "--watch", "6"),
        )
        assert res.returncode == 1, res.stdout + res.stderr
        assert "rolling_back" in res.stdout and "rolled back" in res.stdout, res.stdout
        rollouts = daemons.api(f"/api/v1/models/{MODEL}/rollouts")
        assert [r["phase"] for r in rollouts] == ["done", "rolled_back"]
        assert "failed on agent gw-site0" in rollouts[1]["error"], rollouts[1]
        assert _live(daemons, "site0") == _live(daemons, "site1") == 1.0

        # and back to what ran before the first rollout: the hand-set detector
        res = _cli(
            daemons,
            "models",
            "rollback",
            MODEL,
            "--topology",
            "iot",
            "--component",
            "anomaly",
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert _live(daemons, "site0") == _live(daemons, "site1") == 0.0
        shown = daemons.api(f"/api/v1/models/{MODEL}")
        assert [v["version"] for v in shown["versions"]] == [1, 2]
        assert shown["running"][0]["default"] == 0
        assert shown["running"][0]["agents"] == {"gw-site0": 0, "gw-site1": 0}
        # some readings under the hand-set detector again before the sensors stop
        landed = len(_rows(out))
        wait_for(lambda: len(_rows(out)) > landed + 120, 60, "readings after it")
    finally:
        publisher.stop.set()
        publisher.join(30)
        sensors.close()
    sent = sum(publisher.sent.values())
    expected: dict[str, list[dict[str, Any]]] = {}
    for _, payload in messages[:sent]:
        r = json.loads(payload)
        expected.setdefault(r["sensor"], []).append(r)
    wait_for(lambda: len(_rows(out)) >= sent, 120, "every reading landed")
    rows = _rows(out)
    keys = [(r["sensor"], r["seq"]) for r in rows]
    assert len(keys) == len(set(keys)) == sent, "a reading missing or landed twice"
    _check_flags(rows, expected, {1: good})


def _check_flags(
    rows: list[dict[str, Any]],
    expected: dict[str, list[dict[str, Any]]],
    models: dict[int, bytes],
    runs_by_site: dict[str, list[str]] | None = None,
) -> None:
    """Recompute each reading offline: its smoothed value, then its flag by the version its
    row names ("" the hand-set detector) from the previous reading, with the state carried
    across every replace. Each sensor's versions run as ``runs_by_site`` says (by default
    "" -> 1 -> "", and site0 took 1 first)."""
    loaded = {str(v): load_model(data) for v, data in models.items()}
    by_key = {(r["sensor"], r["seq"]): r for r in rows}
    first_v1: dict[str, int] = {}
    for sensor, readings in expected.items():
        state: Any = None
        ewma: float | None = None
        runs: list[str] = []
        for reading in readings:
            row = by_key[(sensor, reading["seq"])]
            ewma, _ = steps.smooth(ewma, [None, None, None, None, reading["value"]])
            assert row["smoothed"] == ewma
            model = loaded.get(row["model"]) if row["model"] else None
            assert row["model"] == "" or model is not None, row
            state, (out,) = steps.anomaly(
                state,
                [row["site"], sensor, reading["seq"], reading["ts"], reading["value"], ewma],
                model,
                row["model"],
            )
            assert row["anomaly"] == out[6], (sensor, reading["seq"], row)
            if not runs or runs[-1] != row["model"]:
                runs.append(row["model"])
            if row["model"] == "1":
                site = row["site"]
                first_v1[site] = min(first_v1.get(site, reading["ts"]), reading["ts"])
        site = readings[0]["site"]
        assert runs == (runs_by_site or {}).get(site, ["", "1", ""]), (sensor, runs)
    # the canary's (the first wave's) first reading under version 1 came before site1's
    assert first_v1["site0"] < first_v1["site1"], first_v1


@pytest.mark.timeout(900)
def test_waves_then_a_guard_out_of_bounds_on_the_first_wave_rolls_back(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    """Two agents, waves 50,100: the first wave is gw-site0 alone (the online one), watched,
    then every agent; site1, cut off meanwhile, is not waited for and runs the version once
    it is back. A version that flags nearly every reading goes out the same way and its
    first wave passes the guard's bound: rolled back, site1 never ran it. Every reading
    lands once, flagged by the version its row names."""
    out = tmp_path / "out"
    daemons.start_master()
    daemons.start_worker("w1", env={"IOT_OUT": str(out)})
    proxy = LinkProxy(daemons.grpc)  # site1 reaches the master through it
    for site in SITES:
        master = proxy.address if site == "site1" else daemons.grpc
        route = ["--ingress-proxy", proxy.address] if site == "site1" else []
        daemons.start_agent(f"gw-{site}", *_agent_args(mosquitto, site, master, *route))
    submit_to_both(daemons, TOPOLOGY, "iot")
    messages = _messages(int(RATE * 600))
    sensors = Sensors(*mosquitto)
    publisher = SteadySensors(sensors, messages, RATE)
    good, noisy = artifact(threshold=6.0), artifact(threshold=0.001, created_at=2.0)
    try:
        publisher.start()
        wait_for(lambda: _rows(out), 60, "the first readings landed")
        for n, data in ((1, good), (2, noisy)):
            (tmp_path / f"v{n}.json").write_bytes(data)
            up = _cli(daemons, "models", "upload", MODEL, str(tmp_path / f"v{n}.json"))
            assert up.returncode == 0 and f"version {n}" in up.stdout, up.stdout + up.stderr
        target = ("--topology", "iot", "--component", "anomaly", "--watch", "4")
        waves = ("--waves", "50,100", "--guard", "anomalies/scored<=0.5")

        proxy.cut()
        wait_for(lambda: not _node(daemons, "gw-site1")["online"], 30, "site1 offline")
        res = _cli(daemons, "models", "rollout", MODEL, "1", *target, *waves)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "wave 1 (50%): wave live" in res.stdout, res.stdout
        assert "wave 1 (50%) on gw-site0: within bounds; errors 0 (ok)" in res.stdout
        assert _live(daemons, "site0") == 1.0
        (done,) = daemons.api(f"/api/v1/models/{MODEL}/rollouts")
        assert (done["phase"], [s["agents"] for s in done["stages"]]) == ("done", [["gw-site0"]])
        proxy.restore()  # back: it takes the newest revision, version 1 everywhere
        wait_for(lambda: _live(daemons, "site1") == 1.0, 120, "site1 running version 1")

        res = _cli(daemons, "models", "rollout", MODEL, "2", *target, *waves)
        assert res.returncode == 1, res.stdout + res.stderr
        back = daemons.api(f"/api/v1/models/{MODEL}/rollouts")[-1]
        assert back["phase"] == "rolled_back", back
        assert back["error"].startswith("wave 1 (50%): anomalies/scored "), back["error"]
        (stage,) = back["stages"]
        assert (stage["agents"], stage["ok"]) == (["gw-site0"], False)
        assert [g["guard"] for g in stage["guards"]] == ["errors<=0", "anomalies/scored<=0.5"]
        assert stage["guards"][1]["value"] > 0.5
        assert "promoting" not in [s["phase"] for s in back["steps"]]
        assert _live(daemons, "site0") == _live(daemons, "site1") == 1.0
        landed = len(_rows(out))
        wait_for(lambda: len(_rows(out)) > landed + 120, 60, "readings after it")
    finally:
        proxy.restore()  # site1's uplink lands what it kept through it
        publisher.stop.set()
        publisher.join(30)
        sensors.close()
    try:
        sent = sum(publisher.sent.values())
        expected: dict[str, list[dict[str, Any]]] = {}
        for _, payload in messages[:sent]:
            r = json.loads(payload)
            expected.setdefault(r["sensor"], []).append(r)
        wait_for(lambda: len(_rows(out)) >= sent, 120, "every reading landed")
        rows = _rows(out)
        keys = [(r["sensor"], r["seq"]) for r in rows]
        assert len(keys) == len(set(keys)) == sent, "a reading missing or landed twice"
        runs = {"site0": ["", "1", "2", "1"], "site1": ["", "1"]}
        _check_flags(rows, expected, {1: good, 2: noisy}, runs)
    finally:
        proxy.close()
