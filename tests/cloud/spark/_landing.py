"""A landing zone written by hand in the contract's layout (docs/design.md, "Landing zone").

Stands in for the IoT example's ``LandingSink`` in the rollup's tests: Parquet
files under ``ROOT/readings/date=.../site=.../part-<checkpoint>-<task>.parquet``
(partition columns not in the files), each renamed in whole, then a manifest
per commit under the next sequence number.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from headwater._demo.sensors import BASE_TS, injected, readings

COLUMNS = ("sensor", "seq", "ts", "value", "smoothed", "anomaly", "model")
TYPES = (pa.string(), pa.int64(), pa.int64(), pa.float64(), pa.float64(), pa.bool_(), pa.string())


def demo_readings(
    sites: int, per_site: int, count: int, step_ms: int, start: int = 0
) -> list[dict[str, Any]]:
    """The demo sensors' readings ``start..count-1``, ``step_ms`` apart in event time."""
    rows = []
    for _, r in readings(sites, per_site, count):
        if r["seq"] < start:
            continue
        value = float(r["value"])
        rows.append(
            {
                "site": r["site"],
                "sensor": r["sensor"],
                "seq": r["seq"],
                "ts": BASE_TS + r["seq"] * step_ms,
                "value": value,
                "smoothed": value,
                "anomaly": injected(r["site"], r["seq"]),
                "model": "",
            }
        )
    return rows


def _day(ts: int) -> str:
    return datetime.datetime.fromtimestamp(ts / 1000, datetime.UTC).strftime("%Y-%m-%d")


class Lander:
    """Lands batches of readings as committed checkpoints (one task), manifests and all."""

    def __init__(
        self,
        root: Path,
        dataset: str = "readings",
        columns: dict[str, pa.DataType] | None = None,
    ) -> None:
        """``columns``: the file columns and their types (default: the demo readings')."""
        self.columns = columns or dict(zip(COLUMNS, TYPES, strict=True))
        self.dir = root / dataset
        (self.dir / "_manifests").mkdir(parents=True, exist_ok=True)
        self.seq = len(list((self.dir / "_manifests").glob("*.json")))
        self.checkpoint = self.seq

    def land(self, rows: Iterable[dict[str, Any]], task: int = 1) -> int:
        """One checkpoint's commit of ``rows``: its files, then its manifest; its seq."""
        self.checkpoint += 1
        parts: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rows:
            parts.setdefault((_day(r["ts"]), r["site"]), []).append(r)
        files = []
        for (date, site), part in sorted(parts.items()):
            rel = (
                f"date={date}/site={quote(site, safe='')}/part-{self.checkpoint:08d}-{task}.parquet"
            )
            path = self.dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            table = pa.table(
                {c: pa.array([r[c] for r in part], t) for c, t in self.columns.items()}
            )
            tmp = path.with_name("." + path.name + ".tmp")
            pq.write_table(table, tmp)
            os.replace(tmp, path)
            files.append({"path": rel, "rows": len(part)})
        self.seq += 1
        every = [r for p in parts.values() for r in p]
        manifest = {
            "seq": self.seq,
            "checkpoint": self.checkpoint,
            "task": task,
            "files": files,
            "rows": len(every),
            "event_time": {
                "min": min(r["ts"] for r in every),
                "max": max(r["ts"] for r in every),
            },
            "committed_at": time.time(),
        }
        tmp = self.dir / "_manifests" / f".{self.seq:012d}.json.tmp"
        tmp.write_text(json.dumps(manifest))
        os.replace(tmp, self.dir / "_manifests" / f"{self.seq:012d}.json")
        return self.seq
