"""headwater.common.connectors._files: the transactional file sink."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from headwater import Topology
from headwater.common.api import Spout, Tuple, shuffle
from headwater.common.connectors import TransactionalFileSink
from headwater.testing import TestContext


class Source(Spout):
    def next_tuple(self) -> None:
        pass


def make_sink(directory: Path, task: int = 3, format: str = "jsonl") -> TransactionalFileSink:
    """The sink as task ``task``: the sink component is the last, after ``task - 1`` sources."""
    topology = (
        Topology("t")
        .add_spout("src", Source, outputs=("key", "seq"), parallelism=task - 1)
        .add_bolt("sink", partial(TransactionalFileSink, directory), inputs={"src": shuffle()})
    )
    sink = TransactionalFileSink(directory, format=format)
    ctx = TestContext(topology, "sink")
    assert ctx.task_id == task
    sink.open(ctx)
    return sink


def row(key: str, seq: int) -> Tuple:
    return Tuple(None, "src", "default", 1, [key, seq], 0.0)


def published(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("part-*"))


def lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_invisible_until_commit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = make_sink(out)
    try:
        assert sink.columns == ["key", "seq"]
        sink.process(row("a", 1))
        sink.process(row("b", 2))
        assert published(out) == []
        sink.on_checkpoint(1)
        assert published(out) == []
        sink.process(row("c", 3))
        sink.on_commit(1)
        assert published(out) == ["part-00000001-3.jsonl"]
        assert lines(out / "part-00000001-3.jsonl") == [["a", 1], ["b", 2]]
        assert sink.rows == 3

        # rows after the barrier belong to the next checkpoint
        sink.on_checkpoint(2)
        assert published(out) == ["part-00000001-3.jsonl"]
        sink.on_commit(2)
        assert published(out) == ["part-00000001-3.jsonl", "part-00000002-3.jsonl"]
        assert lines(out / "part-00000002-3.jsonl") == [["c", 3]]
    finally:
        sink.close()


def test_commit_publishes_every_sealed_checkpoint_up_to_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = make_sink(out)
    try:
        sink.process(row("a", 1))
        sink.on_checkpoint(1)
        sink.process(row("b", 2))
        sink.on_checkpoint(2)
        sink.process(row("c", 3))
        sink.on_checkpoint(3)
        sink.on_commit(2)
        assert published(out) == ["part-00000001-3.jsonl", "part-00000002-3.jsonl"]
        sink.on_commit(3)
        assert lines(out / "part-00000003-3.jsonl") == [["c", 3]]
    finally:
        sink.close()


def test_empty_checkpoint_writes_no_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = make_sink(out)
    try:
        sink.on_checkpoint(1)
        sink.on_commit(1)
        assert [p.name for p in out.iterdir()] == ["_columns.json"]  # the rows' names only
        assert json.loads((out / "_columns.json").read_text()) == {"columns": ["key", "seq"]}
    finally:
        sink.close()


def test_restore_after_crash(tmp_path: Path) -> None:
    out = tmp_path / "out"
    crashed = make_sink(out)
    crashed.process(row("a", 1))
    crashed.on_checkpoint(1)  # sealed, complete, but the commit never arrived
    crashed.process(row("b", 2))
    crashed.on_checkpoint(2)  # sealed, never completed
    crashed.process(row("c", 3))  # in progress
    crashed.close()  # the file handle; the process "dies" here
    # a published file of a checkpoint past the restored one (after a fallback)
    (out / "part-00000003-3.jsonl").write_text('["z", 9]\n')
    # another task's files are not ours to touch
    (out / ".part-00000002-4.jsonl.pending").write_text('["o", 1]\n')
    (out / "part-00000005-4.jsonl").write_text('["o", 2]\n')

    sink = make_sink(out)
    try:
        sink.on_restore(1)
        names = sorted(p.name for p in out.iterdir())
        assert names == [
            ".part-00000002-4.jsonl.pending",
            "_columns.json",
            "part-00000001-3.jsonl",
            "part-00000005-4.jsonl",
        ]
        assert lines(out / "part-00000001-3.jsonl") == [["a", 1]]

        # the replay writes the rolled-back rows once
        sink.process(row("b", 2))
        sink.on_checkpoint(2)
        sink.on_commit(2)
        assert lines(out / "part-00000002-3.jsonl") == [["b", 2]]
    finally:
        sink.close()


def test_clean_start_restore_drops_in_progress_rows(tmp_path: Path) -> None:
    out = tmp_path / "out"
    crashed = make_sink(out)
    crashed.process(row("a", 1))
    crashed.close()
    sink = make_sink(out)
    try:
        sink.on_restore(0)
        assert [p.name for p in out.iterdir()] == ["_columns.json"]  # the rows' names only
    finally:
        sink.close()


def test_parquet_format(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = make_sink(out, task=2, format="parquet")
    try:
        sink.process(row("a", 1))
        sink.process(row("b", 2))
        sink.on_checkpoint(1)
        assert published(out) == []
        sink.process(row("c", 3))
        sink.on_commit(1)
        assert published(out) == ["part-00000001-2.parquet"]
        table = pq.read_table(out / "part-00000001-2.parquet")
        assert table.column_names == ["key", "seq"]
        assert table.to_pylist() == [{"key": "a", "seq": 1}, {"key": "b", "seq": 2}]
        sink.on_checkpoint(2)
        sink.on_checkpoint(3)  # empty: no file
        sink.on_commit(3)
        assert published(out) == ["part-00000001-2.parquet", "part-00000002-2.parquet"]
        assert pq.read_table(out / "part-00000002-2.parquet").to_pylist() == [
            {"key": "c", "seq": 3}
        ]
        assert not list(out.glob("*.tmp"))
    finally:
        sink.close()


def test_bad_format_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="csv"):
        TransactionalFileSink(tmp_path, format="csv")
