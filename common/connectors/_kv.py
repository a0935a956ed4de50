"""An idempotent key-value sink: the latest row per key, in RocksDB."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rocksdict import AccessType, Options, Rdict

from ..api import Bolt, Context, Tuple
from ..wire import decode, encode
from ._columns import write_columns


class KeyValueSink(Bolt):
    """Stores each row under the value of field ``key`` (one RocksDB per task).

    A stored row is positional; its names are in the folder's ``_columns.json``.
    Idempotent by key: a replay after a rollback writes the same rows again,
    so readers converge to exactly-once results without transactions. Group
    the input by ``key`` so that one task owns each key.
    """

    def __init__(self, directory: str | os.PathLike[str], key: str) -> None:
        self.dir = Path(directory)
        self.key = key

    def open(self, ctx: Context) -> None:
        spec = ctx.topology.component(ctx.component)
        first = spec.inputs[0]
        stream = ctx.topology.component(first.component).stream(first.stream)
        fields = list(stream.fields) if stream else []
        if self.key not in fields:
            raise ValueError(f"KeyValueSink key {self.key!r} is not a field of {fields}")
        self.index = fields.index(self.key)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        self.dir.mkdir(parents=True, exist_ok=True)
        write_columns(self.dir, fields, ctx.task_id)  # a stored row is positional
        self.db = Rdict(str(self.dir / f"task-{ctx.task_id}"), opts)

    def process(self, tup: Tuple) -> None:
        self.db.put(encode(tup.values[self.index]), encode(tup.values))

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self.db.flush()

    def close(self) -> None:
        self.db.close()


def read_key_value_sink(directory: str | os.PathLike[str]) -> dict[Any, Any]:
    """Every key's latest row in a ``KeyValueSink``'s directory (read-only, beside it)."""
    rows: dict[Any, Any] = {}
    for task_db in sorted(Path(directory).glob("task-*")):
        try:
            db = Rdict(str(task_db), Options(raw_mode=True), access_type=AccessType.read_only())
        except Exception:  # not created yet
            continue
        try:
            for k, v in db.items():
                assert isinstance(k, bytes) and isinstance(v, bytes)
                rows[decode(k)] = decode(v)
        finally:
            db.close()
    return rows
