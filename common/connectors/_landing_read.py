"""Reading a landing dataset: its published manifests in order, and its published rows.

What ``LandingSink`` (``_landing.py``) publishes: ``_manifests/<seq:012d>.json``,
numbered without gaps, and the Parquet parts they list. Hidden pending files
(``.pending-*``, ``.commit-*``) are never read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_MANIFEST = re.compile(r"^(\d{12})\.json$")


def published_seqs(directory: Path) -> Iterator[int]:
    for name in os.listdir(directory):
        m = _MANIFEST.match(name)
        if m:
            yield int(m.group(1))


def manifests(
    root: str | os.PathLike[str], dataset: str | None = None, *, after: int = 0
) -> list[dict[str, Any]]:
    """The published manifests of ``root/dataset`` (or of the dataset folder ``root``) with
    ``seq > after``, in order. Every file a manifest lists exists (until a rollback past a
    corrupt checkpoint)."""
    folder = Path(root) / dataset if dataset else Path(root)
    try:
        seqs = sorted(s for s in published_seqs(folder / "_manifests") if s > after)
    except FileNotFoundError:
        return []
    out = []
    for s in seqs:
        out.append(json.loads((folder / "_manifests" / f"{s:012d}.json").read_bytes()))
    return out


def read_landing(
    root: str | os.PathLike[str], dataset: str | None = None, columns: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every published row of the dataset, partition columns included (as strings, a null
    key as None), via ``pyarrow.dataset`` (hidden pending files are ignored)."""
    import pyarrow.dataset as ds

    folder = Path(root) / dataset if dataset else Path(root)
    if not folder.exists():
        return []
    first = next(folder.rglob("part-*.parquet"), None)  # its path names the partition keys
    if first is None:
        return []
    keys = [seg.split("=", 1)[0] for seg in first.relative_to(folder).parts[:-1]]
    import pyarrow as pa

    partitioning = ds.partitioning(pa.schema([(k, pa.string()) for k in keys]), flavor="hive")
    data = ds.dataset(folder, format="parquet", partitioning=partitioning)
    rows: list[dict[str, Any]] = data.to_table(columns=columns).to_pylist()
    return rows
