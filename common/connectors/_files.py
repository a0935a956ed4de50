"""A transactional file sink: JSON lines or Parquet, one file per checkpoint.

Rows of the current checkpoint go to a hidden in-progress file (JSON lines)
or memory (Parquet). At the barrier the sink seals them as a hidden pending
file; when the master reports the checkpoint complete everywhere, the sink
renames it to ``part-<checkpoint>-<task>.<ext>``. A rename is atomic, so a
reader that lists ``part-*`` never sees partial output, and a rollback
deletes what the rolled-back timeline wrote, so it never sees duplicates.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from .._durable import fsync_dir
from ..api import Bolt, Context, Tuple
from ._columns import write_columns
from ._parts import pending_name, publish, roll_back, write_durably


class TransactionalFileSink(Bolt):
    """Writes each input tuple as a row; output becomes visible per completed checkpoint.

    Needs an exactly-once topology (``topology.reliability.mode`` =
    ``EFFECTIVELY_ONCE``). Columns are the fields of the first input stream. In JSON
    lines, a row is a list (its names are in the folder's ``_columns.json``) and bytes
    are written as text (UTF-8, other bytes escaped as ``\\xNN``).
    """

    def __init__(self, directory: str | os.PathLike[str], format: str = "jsonl") -> None:
        if format not in ("jsonl", "parquet"):
            raise ValueError(f"format must be 'jsonl' or 'parquet', got {format!r}")
        self.dir = Path(directory)
        self.format = format
        self._file: IO[str] | None = None
        self._rows: list[list[Any]] = []
        self.rows = 0

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.task = ctx.task_id
        self.dir.mkdir(parents=True, exist_ok=True)
        spec = ctx.topology.component(ctx.component)
        first = spec.inputs[0]
        stream = ctx.topology.component(first.component).stream(first.stream)
        self.columns = list(stream.fields) if stream else []
        if self.format == "jsonl":  # its rows are positional (Parquet's have names)
            write_columns(self.dir, self.columns, self.task)
        self._inprogress = self.dir / f".inprogress-{self.task}.{self.format}"

    # -- data ---------------------------------------------------------------------
    def process(self, tup: Tuple) -> None:
        if self.format == "jsonl":
            if self._file is None:
                self._file = open(self._inprogress, "a")  # noqa: SIM115 (sealed at the barrier)
            self._file.write(json.dumps(tup.values, default=_text) + "\n")
        else:
            self._rows.append(tup.values)
        self.rows += 1

    # -- checkpoints ----------------------------------------------------------------
    def on_checkpoint(self, checkpoint_id: int) -> None:
        pending = self.dir / pending_name(checkpoint_id, self.task, self.format)
        if self.format == "jsonl":
            if self._file is None:
                return
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            self._inprogress.replace(pending)
        else:
            if not self._rows:
                return
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pylist(
                [dict(zip(self.columns, row, strict=False)) for row in self._rows]
            )
            write_durably(pending, lambda f: pq.write_table(table, f))
            self._rows = []
        fsync_dir(self.dir)

    def on_commit(self, checkpoint_id: int) -> None:
        publish(self.dir, self.task, up_to=checkpoint_id)

    def on_restore(self, checkpoint_id: int) -> None:
        """Publish what completed checkpoints sealed; drop what the rollback undoes."""
        self._inprogress.unlink(missing_ok=True)
        roll_back(self.dir, self.task, checkpoint_id)
        publish(self.dir, self.task, up_to=checkpoint_id)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _text(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "backslashreplace")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
