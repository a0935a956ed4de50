"""A landing dataset's columns: their kinds, how a value is held in one, and partition paths.

A column's kind is int64, double, bool or string (``KINDS``), inferred from its
first non-None value (``infer``) and fixed per dataset in ``_schema.json``
(``read_schema``, ``settle_schema``); ``convert`` holds a value as its column's kind (a value that
is neither goes to a string column as JSON text). ``segment`` writes a
partition value as a path segment, escaped as Hive does.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Spark's and pyarrow's name for a null key
KINDS = ("int64", "double", "bool", "string")


def is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def infer(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "double"
    return "string"


def convert(kind: str, value: Any, column: str) -> Any:
    """``value`` as a ``kind`` column holds it; ValueError if it cannot be."""
    if value is None:
        return None
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bytes | bytearray):
            return bytes(value).decode("utf-8", "backslashreplace")
        return json.dumps(value, default=_text)
    if kind == "int64":
        if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
            return value
    elif kind == "double":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif kind == "bool":
        if isinstance(value, bool):
            return value
    else:
        return value  # a type the user's schema gave: pyarrow converts it
    raise ValueError(f"column {column!r} holds {kind}, got {value!r}")


def _text(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return repr(value)


def segment(value: Any) -> str:
    """A partition value as a path segment (escaped as Hive does; None: the null key)."""
    if value is None:
        return NULL_PARTITION
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", "backslashreplace")
    return quote(str(value), safe="") or NULL_PARTITION


def kind_of(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_int64(t):
        return "int64"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t):
        return "string"
    return "other"


def arrow_type(kind: str) -> Any:
    import pyarrow as pa

    return {"int64": pa.int64, "double": pa.float64, "bool": pa.bool_}.get(kind, pa.string)()


def read_schema(directory: Path) -> dict[str, str]:
    try:
        doc = json.loads((directory / "_schema.json").read_text())
    except FileNotFoundError:
        return {}
    columns = doc.get("columns") if isinstance(doc, dict) else None
    if not isinstance(columns, dict) or not all(k in KINDS for k in columns.values()):
        raise ValueError(f"{directory / '_schema.json'} is not a landing schema: {doc!r}")
    return columns


def settle_schema(
    directory: Path, task: int, mine: dict[str, str], partitions: tuple[str, ...]
) -> dict[str, str]:
    """Fix a dataset's column kinds in ``_schema.json`` (the first writer's win; a writer
    with a column more adds it) with its partition keys in folder order; the stored kinds."""
    stored = read_schema(directory)
    if stored and mine.keys() <= stored.keys():
        return stored
    path = directory / "_schema.json"
    tmp = directory / f".schema-{task}.json.tmp"
    doc = {"columns": {**mine, **stored}, "partitions": list(partitions)}
    tmp.write_text(json.dumps(doc, indent=1))
    if stored:
        tmp.replace(path)  # the stream grew a column
    else:
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
        tmp.unlink()
    return read_schema(directory)
