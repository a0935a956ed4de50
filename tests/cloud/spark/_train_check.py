"""The check of a trained artifact's figures, shared by the training tests: recomputed on the
held-out split with pyarrow and plain Python (not Spark), from the landed readings."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

from headwater._demo.sensors import injected
from headwater.common.models import dump_model, load_model

from ..._iot import anomaly_eval


def held_out(landing: Path, holdout: float) -> list[dict[str, Any]]:
    """Each landed reading with its sensor's previous [value, smoothed] and whether it is held
    out (the latest ``holdout`` of its sensor's event time)."""
    table = ds.dataset(landing / "readings", format="parquet", partitioning="hive").to_table()
    by_sensor: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in table.to_pylist():
        by_sensor[row["sensor"]].append(row)
    out = []
    for rows in by_sensor.values():
        rows.sort(key=lambda r: r["seq"])
        lo, hi = min(r["ts"] for r in rows), max(r["ts"] for r in rows)
        cut = lo + (hi - lo) * (1.0 - holdout)
        prev = None
        for r in rows:
            out.append({**r, "prev": prev, "test": r["ts"] > cut})
            prev = [r["value"], r["smoothed"]]
    return out


def assert_evaluation(doc: dict[str, Any], landing: Path, holdout: float, rows: int) -> None:
    """``doc``'s figures are those of its own parameters on the held-out split of the ``rows``
    landed readings, for the model and for the hand-set detector (truth: the example's)."""
    model = load_model(dump_model(doc))
    landed = held_out(landing, holdout)
    test = [r for r in landed if r["test"]]
    train_rows = [r for r in landed if not r["test"]]
    assert len(landed) == rows
    ev = doc["evaluation"]
    assert ev["test_rows"] == len(test) > 0
    assert ev["holdout"] == holdout
    assert ev["labels"] == "headwater._demo.sensors:injected"

    def counts(flags: list[bool]) -> list[int]:
        truth = [injected(r["site"], r["seq"]) for r in test]
        pairs = list(zip(flags, truth, strict=True))
        return [
            sum(p and t for p, t in pairs),
            sum(p and not t for p, t in pairs),
            sum(not p and t for p, t in pairs),
            sum(not p and not t for p, t in pairs),
        ]

    scored = [model.flag(r["sensor"], r["prev"], r["value"]) for r in test]
    assert ev["model"] == anomaly_eval.figures(len(test), *counts(scored))
    assert ev["handset"] == anomaly_eval.figures(len(test), *counts([r["anomaly"] for r in test]))
    sensors = {r["sensor"] for r in landed}
    assert doc["trained"] == {
        "from_ts": min(r["ts"] for r in train_rows),
        "to_ts": max(r["ts"] for r in train_rows),
        "rows": len(train_rows),
        "sensors": len(sensors),
    }
    assert sorted(doc["params"]["sensors"]) == sorted(sensors)
    assert doc["created_at"] > 1.7e9
    assert "version" not in doc
