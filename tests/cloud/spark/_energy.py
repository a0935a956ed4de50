"""The energy example's data for the Spark tests: a landing its own topology writes in this
process, and the rows its Spark side must produce, recomputed offline."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from collections import defaultdict
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from headwater.common.plan import load_topology
from headwater.testing import LocalRun, TestSource

ENERGY = Path(__file__).resolve().parents[3] / "examples" / "energy"
SITES, METERS, COUNT, FIRST = 2, 3, 40, 24  # FIRST rounds land before the job's first run
ARRIVED_MS = 1_767_744_000_000  # 2026-01-07: when the agent took them in, after every ts


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ENERGY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(ENERGY))
DATA = _module("energy_data")
JOB = _module("daily_report")
sys.path.remove(str(ENERGY))


class Landing:
    """The energy topology in this process, its meter log replaced by a list that grows."""

    def __init__(self, out: Path) -> None:
        before = os.environ.get("ENERGY_OUT")
        os.environ["ENERGY_OUT"] = str(out)
        try:
            topology = load_topology(ENERGY / "energy_pipeline.py")
        finally:
            if before is None:
                del os.environ["ENERGY_OUT"]
            else:
                os.environ["ENERGY_OUT"] = before
        spout = topology.component("meter_log")
        self.items: list[tuple[str, bytes, int]] = []
        source = dataclasses.replace(spout, factory=partial(TestSource, self.items))
        topology = dataclasses.replace(
            topology, components=tuple(source if c is spout else c for c in topology.components)
        )
        self.run = LocalRun(topology)
        self.root = out / "landing"

    def land(self, messages: list[tuple[str, bytes]]) -> None:
        """Runs ``messages`` through the topology and commits them (one checkpoint)."""
        source = self.run.instances("meter_log")[0]
        assert isinstance(source, TestSource)
        start = len(source.items)
        source.items.extend((t, p, ARRIVED_MS) for t, p in messages)
        if hasattr(source, "todo"):  # opened: queue the new ones, in order
            source.todo[:0] = reversed(range(start, len(source.items)))
        for task in self.run.tasks.values():
            task.idle = 0
        self.run.run()
        self.run.checkpoint()


def expected(count: int) -> list[dict[str, Any]]:
    """The report's rows, recomputed from the readings and events the example must land."""
    days: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in DATA.meters_rows(SITES, METERS, count):
        d = days.setdefault(
            (r["site"], r["meter_id"], r["date"]),
            {"readings": 0, "kwh": 0.0, "v": [], "low_readings": 0, "ts": []},
        )
        d["readings"] += 1
        d["kwh"] += r["kwh"]
        d["v"].append(r["voltage"])
        d["low_readings"] += int(r["low_voltage"])
        d["ts"].append(r["ts"])
    events: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for e in DATA.grid_event_rows(SITES, METERS, count):
        events[(e["site"], e["meter_id"], e["date"])][e["kind"]] += 1
    return sorted(
        (
            {
                "site": site,
                "meter_id": meter,
                "readings": d["readings"],
                "kwh": round(d["kwh"], 6),
                "v_min": min(d["v"]),
                "v_max": max(d["v"]),
                "low_readings": d["low_readings"],
                "sags": events[(site, meter, date)]["sag"],
                "recoveries": events[(site, meter, date)]["recover"],
                "first_ts": min(d["ts"]),
                "last_ts": max(d["ts"]),
                "date": date,
            }
            for (site, meter, date), d in days.items()
        ),
        key=key,
    )


def key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["date"], r["site"], r["meter_id"])


GRAINS = {"hourly": 3_600_000, "daily": 86_400_000}
GROUPS = {"meter": ("site", "meter_id"), "site": ("site",)}


def expected_rollups(count: int) -> dict[str, dict[tuple[Any, ...], dict[str, Any]]]:
    """``rollup.toml``'s tables, recomputed: table -> (keys..., window_start ms) -> the exact
    measures (``readings``, ``kwh`` to 9 places, ``v_min``, ``v_max``, ``low``) and the
    window's voltages (for the approximate ones)."""
    out: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    rows = DATA.meters_rows(SITES, METERS, count)
    for grain, ms in GRAINS.items():
        for group, cols in GROUPS.items():
            table: dict[tuple[Any, ...], dict[str, Any]] = {}
            for r in rows:
                k = (*(r[c] for c in cols), r["ts"] - r["ts"] % ms)
                w = table.setdefault(k, {"readings": 0, "kwh": 0.0, "volts": [], "low": 0})
                w["readings"] += 1
                w["kwh"] += r["kwh"]
                w["volts"].append(r["voltage"])
                w["low"] += int(r["low_voltage"])
            for w in table.values():
                w["kwh"] = round(w["kwh"], 9)
                w["v_min"], w["v_max"] = min(w["volts"]), max(w["volts"])
            out[f"{grain}_{group}"] = table
    return out
