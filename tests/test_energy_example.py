"""The energy example without a cluster: its steps over what its publisher sends land exactly
what ``energy_data`` recomputes from the example's rules, and its topology's shape."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from headwater import DeadLetter, Reliability
from headwater.common.plan import load_topology

ENERGY = Path(__file__).resolve().parent.parent / "examples" / "energy"


@pytest.fixture(scope="module")
def energy() -> Iterator[tuple[ModuleType, ModuleType, ModuleType]]:
    sys.path.insert(0, str(ENERGY))
    try:
        yield tuple(  # type: ignore[misc]
            importlib.import_module(m) for m in ("energy_steps", "energy_io", "energy_data")
        )
    finally:
        sys.path.remove(str(ENERGY))


def _run_steps(
    steps: ModuleType, io: ModuleType, msgs: list[tuple[str, bytes]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], int]:
    """parse -> dedup -> sag over ``msgs``, as the topology chains them, state per meter."""
    last: dict[str, Any] = {}
    in_sag: dict[str, Any] = {}
    meters, events, dead, dropped = [], [], [], 0
    for topic, payload in msgs:
        try:
            row = steps.parse(topic, payload, received_ms=2_000_000_000_000)
        except DeadLetter as exc:
            dead.append(str(exc))
            continue
        last[row[0]], rows = steps.dedup(last.get(row[0]), row)
        dropped += not rows
        for r in rows:
            in_sag[r[0]], reading, evs = steps.sag(in_sag.get(r[0]), r)
            meters.append(dict(zip(io.METERS, reading, strict=True)))
            events += [dict(zip(io.GRID_EVENT, e, strict=True)) for e in evs]
    return meters, events, dead, dropped


# what the landing adds to a reading the steps emit: its date partition, and the predict
# step's fields (unscored here: no model is rolled out to the steps run by hand)
_LANDED_ONLY = ("date", "predicted_kwh", "model_version")


def _no_date(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        ({k: v for k, v in r.items() if k not in _LANDED_ONLY} for r in rows),
        key=lambda r: (r["meter_id"], r["ts"]),
    )


def test_the_steps_land_what_the_data_module_recomputes(
    energy: tuple[ModuleType, ModuleType, ModuleType],
) -> None:
    steps, io, data = energy
    msgs = list(data.messages(2, 3, 40))
    assert len(msgs) == 2 * 3 * 40 + 2 + 2 * 5  # readings, a redelivery and 5 bad per site
    meters, events, dead, dropped = _run_steps(steps, io, msgs)
    assert _no_date(meters) == _no_date(data.meters_rows(2, 3, 40))
    assert _no_date(events) == _no_date(data.grid_event_rows(2, 3, 40))
    assert dropped == data.redeliveries(2, 40) == 2
    assert len(dead) == 10
    assert data.unexplained(dead, 2, 40) == []
    assert data.unexplained([*dead[1:], "odd"], 2, 40) == [
        "no dead letter says 'Expecting value'",
        "unexpected dead letter: 'odd'",
    ]
    kinds = [e["kind"] for e in data.grid_event_rows(2, 3, 40)]
    assert kinds.count("sag") == 14 and kinds.count("recover") == 13  # one still sagging
    assert {r["date"] for r in data.meters_rows(2, 3, 40)} == {"2026-01-05", "2026-01-06"}


def test_parse_refuses_with_a_reason(energy: tuple[ModuleType, ModuleType, ModuleType]) -> None:
    steps = energy[0]
    good = b'{"meter_id": "m", "site": "s", "seq": 1, "ts": 5, "kwh": 1, "voltage": 230}'
    assert steps.parse("meters/s/m", good, 0) == ["m", "s", 1, 5, 1.0, 230.0]
    for payload, reason in [
        (b"[1]", "a reading must be a JSON object"),
        (good.replace(b'"m"', b'""'), "meter_id and site must be non-empty strings"),
        (good.replace(b'"seq": 1', b'"seq": true'), "seq and ts must be non-negative integers"),
        (good.replace(b"230", b"NaN"), "voltage must be a finite number"),
        (good.replace(b'"ts": 5', b'"ts": 9999999999'), "h ahead of its arrival (0); at most 1 h"),
    ]:
        with pytest.raises(DeadLetter, match=re.escape(reason)):
            steps.parse("meters/s/m", payload, 0)
    with pytest.raises(DeadLetter, match="seq 200001 is 200000 ahead"):
        steps.dedup(1, ["m", "s", 200_001, 5, 1.0, 230.0])


def test_the_energy_pipeline_runs_its_steps_on_the_edge_and_lands_in_the_cloud(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENERGY_LOG", str(tmp_path / "log"))
    monkeypatch.setenv("ENERGY_OUT", str(tmp_path / "out"))
    topology = load_topology(ENERGY / "energy_pipeline.py")
    assert topology.name == "energy"
    assert topology.config["topology.reliability.mode"] == Reliability.EXACTLY_ONCE.value
    where = {c.name: c.placement.where for c in topology.components}
    assert where == {
        **dict.fromkeys(("meter_log", "parse", "dedup", "sag", "predict"), "edge"),
        **dict.fromkeys(("land_meters", "land_grid_events", "dead_letters"), "cloud"),
    }
    sag = topology.component("sag")
    assert [(s.name, s.fields) for s in sag.outputs] == [
        ("default", ("meter_id", "site", "seq", "ts", "kwh", "voltage", "low_voltage")),
        ("events", ("meter_id", "site", "ts", "kind", "voltage")),
    ]
    predict = topology.component("predict")  # the example's model, scored on the edge
    assert predict.outputs[0].fields == (*sag.outputs[0].fields, "predicted_kwh", "model_version")
    assert not (tmp_path / "out").exists()
