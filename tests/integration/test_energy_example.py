"""The energy example on a cluster: Mosquitto, a master, a worker and an agent; its publisher's
readings land exactly as ``energy_data`` recomputes them offline (no Spark here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors import manifests, read_landing

from ._daemons import Daemons
from ._support import EXAMPLES, landed_dead_letters, wait_for

pytestmark = pytest.mark.cluster
ENERGY = EXAMPLES / "energy"
PIPELINE = ENERGY / "energy_pipeline.py"
SITES, METERS, COUNT = 2, 3, 40

sys.path.insert(0, str(ENERGY))
import energy_data  # noqa: E402  (the example's own module, beside its topology)

sys.path.remove(str(ENERGY))


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["meter_id"], r["ts"], r.get("kind", ""))


def _landed(root: Path, dataset: str) -> list[dict[str, Any]]:
    return sorted(read_landing(root, dataset), key=_key)


def start_energy_cluster(daemons: Daemons, mosquitto: tuple[str, int], out: Path) -> None:
    """A master, a worker landing under ``out`` and an agent ingesting ``meters/#``, with
    the energy topology submitted and the agent subscribed and linked to the cloud."""
    daemons.start_master()
    daemons.start_worker("w1", env={"ENERGY_OUT": str(out)})
    host, port = mosquitto
    daemons.start_agent(
        "gw", "--master", daemons.grpc, "--mqtt", f"{host}:{port}", "--topic", "meters/#"
    )
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "the worker and the agent online",
    )
    daemons.cli("submit", str(PIPELINE))

    def ready() -> bool:
        node = next(n for n in daemons.api("/api/v1/nodes") if n["id"] == "gw")
        connected = node["metrics"].get("mqtt_connected") == 1.0
        return connected and bool(node["uplinks"].get("energy", {}).get("connected"))

    wait_for(ready, 60, "the agent subscribed and its uplink open")


def publish(mosquitto: tuple[str, int], cwd: Path) -> str:
    """Runs the example's publisher as its README does; its output."""
    run = [sys.executable, str(ENERGY / "meters.py"), "--broker", "{}:{}".format(*mosquitto)]
    run += ["--sites", str(SITES), "--meters", str(METERS), "--count", str(COUNT)]
    done = subprocess.run(run, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_energy_example_lands_exactly_what_its_meters_sent(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    root = out / "landing"
    start_energy_cluster(daemons, mosquitto, out)
    sent = len(list(energy_data.messages(SITES, METERS, COUNT)))
    assert publish(mosquitto, tmp_path).strip() == f"published {sent} messages to " + (
        "{}:{}".format(*mosquitto)
    )

    want_meters = sorted(energy_data.meters_rows(SITES, METERS, COUNT), key=_key)
    want_events = sorted(energy_data.grid_event_rows(SITES, METERS, COUNT), key=_key)
    reasons = energy_data.dead_letter_reasons(SITES, COUNT)
    wait_for(lambda: len(landed_dead_letters(out)) >= len(reasons), 120, "the dead letters")
    wait_for(lambda: len(_landed(root, "meters")) >= len(want_meters), 120, "every reading")
    wait_for(lambda: len(_landed(root, "grid_events")) >= len(want_events), 60, "every event")

    got = _landed(root, "meters")
    assert len({(r["meter_id"], r["seq"]) for r in got}) == len(got)  # each reading once
    assert got == want_meters
    assert len(got) == SITES * METERS * COUNT
    assert _landed(root, "grid_events") == want_events
    assert {r["kind"] for r in want_events} == {"sag", "recover"}
    dead = landed_dead_letters(out)  # [component, reason, traceback, record]
    assert energy_data.unexplained([d[1] for d in dead], SITES, COUNT) == []
    assert {d[0] for d in dead} == {"parse"}
    assert all(d[3][0].startswith("meters/site") for d in dead)  # the raw [topic, ...]
    for dataset in ("meters", "grid_events", "dead_letters"):
        ms = manifests(root, dataset)
        assert [m["seq"] for m in ms] == list(range(1, len(ms) + 1))
        assert sum(m["rows"] for m in ms) == len(read_landing(root, dataset))
