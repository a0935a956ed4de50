"""The landing zone: a stream landed as a Parquet dataset, exactly once, with manifests.

    ROOT/<dataset>/
      date=YYYY-MM-DD/site=<site>/part-<checkpoint:08d>-<task>.parquet
      _manifests/<seq:012d>.json
      _schema.json

Hive partitions: ``date`` (the UTC day of the row's event time, epoch ms), then
``site``, then the extra keys the user names; partition columns live in the
path only. Per checkpoint and task: rows are buffered per partition and, at
the barrier (``on_checkpoint``), sealed as hidden pending parts plus a
pending manifest (``_manifests/.pending-<checkpoint>-<task>.json``); when
the checkpoint completes everywhere (``on_commit``) the parts are renamed to
their final names, then the manifest is published under the next free
sequence number: written as ``.commit-<checkpoint>-<task>.json``, then
hard-linked to ``<seq>.json`` (``os.link`` fails if the name is taken: try
the next one), so numbers are contiguous and unique across tasks and
processes. A crash anywhere in between is finished by ``on_restore``: the
commit file's link count says whether its manifest was published, so it is
published exactly once. A rollback deletes the task's parts of the undone
checkpoints (see ``_parts``). The manifests' half of this protocol is
``LandingCommits`` (``_landing_commits.py``).

Column types are fixed per dataset in ``_schema.json`` (the first task to
seal creates it, with the partition keys in folder order, ``partitions``; a
stream that grows a column adds it): int64, double, bool or string, from the first non-None
value (a column only ever None: string); a value that is neither is written
as JSON text in a string column (``_landing_columns.py``). Readers of what is
published are in ``_landing_read.py``.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._durable import fsync_dir
from ..api import Bolt, Context, Tuple
from ._landing_columns import (
    NULL_PARTITION,
    arrow_type,
    convert,
    infer,
    is_name,
    kind_of,
    read_schema,
    segment,
    settle_schema,
)
from ._landing_commits import LandingCommits
from ._parts import pending_name, write_durably

if TYPE_CHECKING:
    import pyarrow as pa

EventTime = str | Callable[[dict[str, Any]], int | None] | None
_DAY_MS = 86_400_000
_EPOCH = dt.date(1970, 1, 1)
_MIN_MS = (dt.date.min - _EPOCH).days * _DAY_MS
_MAX_MS = (dt.date.max - _EPOCH).days * _DAY_MS + _DAY_MS
_MAX_SEGMENT = 255  # a folder name's bytes (NAME_MAX); escaped values are ASCII


class LandingSink(Bolt):
    """Lands its input stream as a partitioned Parquet dataset, committed per checkpoint.

    Needs an exactly-once topology. ``event_time`` is the column of epoch-ms event
    time that dates each row (or a function of the row, as a ``{field: value}``
    dict, returning epoch ms or None); without it, or when it is None for a row, the
    row goes under ``date=__HIVE_DEFAULT_PARTITION__`` (read as a null date): a
    date from the wall clock would differ on replay. ``site`` and ``partition_by``
    name further partition columns. ``schema`` (a pyarrow schema of the non-partition
    columns) fixes the types instead of inferring them. ``fields`` names the values of a
    row that arrives as one value, the last of the tuple (a DSL stream's ``[key, value]``
    records, the value a list or tuple); without it, the columns are the input stream's.

    >>> sink = LandingSink("/tmp/landing", "readings", event_time="ts", site="site")
    >>> sink.partitions
    ('site',)
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        dataset: str,
        *,
        event_time: EventTime = None,
        site: str | None = None,
        partition_by: Sequence[str] = (),
        schema: pa.Schema | None = None,
        fields: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(root, str | os.PathLike) or not str(root):
            raise ValueError(f"LandingSink root must be a folder path, got {root!r}")
        if not isinstance(dataset, str) or not re.fullmatch(r"[A-Za-z0-9][\w.-]*", dataset):
            raise ValueError(
                f"LandingSink dataset must be a folder name (letters, digits, '_', '-', '.', "
                f"not starting with '.' or '_'), got {dataset!r}"
            )
        if not (event_time is None or callable(event_time) or is_name(event_time)):
            raise ValueError(
                f"LandingSink event_time must be a column name or a function, got {event_time!r}"
            )
        if site is not None and not is_name(site):
            raise ValueError(f"LandingSink site must be a column name, got {site!r}")
        if isinstance(partition_by, str) or not all(is_name(c) for c in partition_by):
            raise ValueError(
                f"LandingSink partition_by must be a list of column names, got {partition_by!r}"
            )
        if fields is not None and (
            isinstance(fields, str)
            or not all(is_name(c) for c in fields)
            or len(set(fields)) != len(fields)
        ):
            raise ValueError(f"LandingSink fields must be distinct column names, got {fields!r}")
        keys = ("date", *([site] if site else []), *partition_by)
        if len(set(keys)) != len(keys):
            raise ValueError(f"LandingSink partition columns repeat: {list(keys)}")
        if isinstance(event_time, str) and event_time in keys:
            raise ValueError(f"LandingSink event_time {event_time!r} cannot be a partition column")
        if schema is not None:
            import pyarrow as pa

            if not isinstance(schema, pa.Schema):
                raise ValueError(f"LandingSink schema must be a pyarrow.Schema, got {schema!r}")
        self.root = Path(root)
        self.dataset = dataset
        self.dir = self.root / dataset
        self.event_time = event_time
        self.partitions: tuple[str, ...] = keys[1:]
        self.schema = schema
        self.row_fields = tuple(fields) if fields is not None else None
        self.rows = 0

    # -- lifecycle -------------------------------------------------------------------
    def open(self, ctx: Context) -> None:
        self.task = ctx.task_id
        spec = ctx.topology.component(ctx.component)
        first = spec.inputs[0]
        stream = ctx.topology.component(first.component).stream(first.stream)
        fields = list(stream.fields) if stream else []
        if self.row_fields is not None:
            fields = list(self.row_fields)
        needed = [
            *self.partitions,
            *([self.event_time] if isinstance(self.event_time, str) else []),
        ]
        missing = [c for c in needed if c not in fields]
        if missing:
            raise ValueError(
                f"LandingSink {self.dataset!r}: {missing} not among the input fields {fields}"
            )
        self.fields = fields
        self.columns = [c for c in fields if c not in self.partitions]
        self._part_idx = [fields.index(c) for c in self.partitions]
        self._col_idx = [fields.index(c) for c in self.columns]
        self._time_idx = fields.index(self.event_time) if isinstance(self.event_time, str) else -1
        self._kinds: dict[str, str | None] = dict.fromkeys(self.columns)
        if self.schema is not None:
            absent = [c for c in self.columns if c not in self.schema.names]
            if absent:
                raise ValueError(f"LandingSink {self.dataset!r}: schema lacks columns {absent}")
            self._kinds = {c: kind_of(self.schema.field(c).type) for c in self.columns}
            self._settled = True
        else:
            stored = read_schema(self.dir)
            self._kinds.update({c: k for c, k in stored.items() if c in self._kinds})
            self._settled = all(self._kinds.values())
        self._commits = LandingCommits(self.dir, self.task)
        self._groups: dict[str, list[list[Any]]] = {}
        self._times: list[int] = []  # min, max event time of the open checkpoint
        self._days: dict[int, str] = {}

    def process(self, tup: Tuple) -> None:
        values: Any = tup.values
        if self.row_fields is not None:
            values = values[-1] if values else None
            if not isinstance(values, list | tuple) or len(values) != len(self.fields):
                raise ValueError(
                    f"LandingSink {self.dataset!r} expects rows of {len(self.fields)} values "
                    f"({', '.join(self.fields)}), got {values!r}"
                )
        kinds = self._kinds
        inferred: dict[str, str] = {}  # kept only once the whole row is accepted
        row = []
        for c, i in zip(self.columns, self._col_idx, strict=True):
            v = values[i]
            kind = kinds[c]
            if kind is None and v is not None:
                kind = inferred[c] = infer(v)
            row.append(convert(kind, v, c) if kind is not None else v)
        if self._time_idx >= 0:
            ms = values[self._time_idx]
        elif self.event_time is not None:
            assert callable(self.event_time)
            ms = self.event_time(dict(zip(self.fields, values, strict=False)))
        else:
            ms = None
        path = [f"date={self._date(ms)}"]
        path += [
            f"{k}={segment(values[i])}"
            for k, i in zip(self.partitions, self._part_idx, strict=False)
        ]
        if max(map(len, path)) > _MAX_SEGMENT:  # refused here (a dead letter), not at the seal
            k, _, v = max(path, key=len).partition("=")
            raise ValueError(
                f"partition {k} value {v[:40]!r}... is {len(v)} characters as a folder name "
                f"(escaped); a folder name is at most {_MAX_SEGMENT - len(k) - 1} for {k}"
            )
        if inferred:
            kinds.update(inferred)
        self._groups.setdefault("/".join(path), []).append(row)
        if ms is not None:
            ms = int(ms)
            t = self._times
            if not t:
                t += [ms, ms]
            elif ms < t[0]:
                t[0] = ms
            elif ms > t[1]:
                t[1] = ms
        self.rows += 1

    def _date(self, ms: Any) -> str:
        if ms is None:
            return NULL_PARTITION
        if isinstance(ms, bool) or not isinstance(ms, int | float):
            raise ValueError(f"event time must be epoch ms (a number), got {ms!r}")
        if not _MIN_MS <= ms < _MAX_MS:  # NaN too: no day to partition it by
            raise ValueError(f"event time {ms!r} is not epoch ms of a day in years 1 to 9999")
        day = int(ms) // _DAY_MS
        text = self._days.get(day)
        if text is None:
            if len(self._days) > 10_000:
                self._days.clear()
            text = self._days[day] = (_EPOCH + dt.timedelta(days=day)).isoformat()
        return text

    # -- checkpoints --------------------------------------------------------------------
    def on_checkpoint(self, checkpoint_id: int) -> None:
        """Seal the checkpoint's rows: a hidden part per partition, then a pending manifest."""
        if not self._groups:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = self._arrow_schema()
        name = pending_name(checkpoint_id, self.task, "parquet")
        files: list[dict[str, Any]] = []
        for rel, rows in sorted(self._groups.items()):
            folder = self.dir / rel
            folder.mkdir(parents=True, exist_ok=True)
            table = pa.Table.from_pylist(
                [dict(zip(self.columns, r, strict=True)) for r in rows], schema=schema
            )
            write_durably(folder / name, partial(pq.write_table, table))
            fsync_dir(folder)
            files.append({"path": f"{rel}/{name[1 : -len('.pending')]}", "rows": len(rows)})
        doc = {
            "checkpoint": checkpoint_id,
            "task": self.task,
            "files": files,
            "rows": sum(f["rows"] for f in files),
            "event_time": {"min": self._times[0], "max": self._times[1]}
            if self._times
            else {"min": None, "max": None},
        }
        self._commits.seal(checkpoint_id, doc)
        self._groups, self._times = {}, []

    def on_commit(self, checkpoint_id: int) -> None:
        self._commits.publish(up_to=checkpoint_id)

    def on_restore(self, checkpoint_id: int) -> None:
        """Publish what completed checkpoints sealed (their manifests once); drop what the
        rollback undoes: the task's parts and manifests-to-be of later checkpoints."""
        self._groups, self._times = {}, []
        self._commits.restore(checkpoint_id)

    # -- schema -------------------------------------------------------------------------
    def _arrow_schema(self) -> pa.Schema:
        import pyarrow as pa

        if self.schema is not None:
            return pa.schema([self.schema.field(c) for c in self.columns])
        if not self._settled:
            self._settle()
        return pa.schema([(c, arrow_type(k or "string")) for c, k in self._kinds.items()])

    def _settle(self) -> None:
        """Fix the dataset's column types in ``_schema.json`` (the first writer's win)."""
        mine = {c: k or "string" for c, k in self._kinds.items()}
        stored = settle_schema(self.dir, self.task, mine, ("date", *self.partitions))
        changed = [c for c in mine if stored[c] != self._kinds[c]]
        kinds = {c: stored[c] for c in mine}
        if changed:  # another task settled first, differently: convert what is buffered
            for rows in self._groups.values():
                for r in rows:
                    for i, c in enumerate(self.columns):
                        if c in changed:
                            r[i] = convert(kinds[c], r[i], c)
        self._kinds = dict(kinds)
        self._settled = True
