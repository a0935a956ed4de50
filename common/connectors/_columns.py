"""The column names of a sink whose rows are positional: ``_columns.json`` beside them.

``TransactionalFileSink``'s JSON lines and ``KeyValueSink``'s stored rows are positional
records (a list a row: half the cost of a dict, see ARCHITECTURE.md), so the names live
once in the sink's folder: ``{"columns": [...]}``, the fields of the stream the sink
reads, written by every task when it opens (the same content; a rename makes each write
whole). A revision whose stream has other fields writes its own names; rows of another
length than the names' are older ones and stay positional. ``headwater read`` turns each
row into an object with them. Parquet parts and landing datasets carry their schema.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE = "_columns.json"


def write_columns(directory: Path, columns: list[str], task: int) -> None:
    """Record ``columns`` in ``directory`` (unchanged if they are already there)."""
    path = directory / FILE
    if read_columns(directory) == columns:
        return
    tmp = directory / f".{FILE}.{task}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"columns": columns}) + "\n")
    tmp.replace(path)


def read_columns(directory: Path) -> list[str] | None:
    """The column names recorded in ``directory``; None when none are (or unreadable)."""
    try:
        doc = json.loads((directory / FILE).read_text())
    except (OSError, ValueError):
        return None
    columns = doc.get("columns") if isinstance(doc, dict) else None
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        return None
    return columns
