"""headwater.common.connectors._kv: the idempotent key-value sink."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from rocksdict import Options, Rdict

from headwater import Topology
from headwater.common.api import Context, Spout, Tuple, fields
from headwater.common.connectors import KeyValueSink
from headwater.common.wire import decode
from headwater.testing import TestContext


class Source(Spout):
    def next_tuple(self) -> None:
        pass


def make_ctx(directory: Path, task: int = 5) -> Context:
    """The sink's context as task ``task``: the sink is the last, after ``task - 1`` sources."""
    topology = (
        Topology("t")
        .add_spout("src", Source, outputs=("sensor", "value"), parallelism=task - 1)
        .add_bolt(
            "kv", partial(KeyValueSink, directory, "sensor"), inputs={"src": fields("sensor")}
        )
    )
    ctx = TestContext(topology, "kv")
    assert ctx.task_id == task
    return ctx


def row(sensor: str, value: float) -> Tuple:
    return Tuple(None, "src", "default", 1, [sensor, value], 0.0)


def read_back(path: Path) -> dict[Any, Any]:
    db = Rdict(str(path), Options(raw_mode=True))
    try:
        out: dict[Any, Any] = {}
        for key, value in db.items():
            assert isinstance(key, bytes)
            assert isinstance(value, bytes)
            out[decode(key)] = decode(value)
        return out
    finally:
        db.close()


def test_latest_row_per_key_and_idempotent_replay(tmp_path: Path) -> None:
    out = tmp_path / "kv"
    sink = KeyValueSink(out, key="sensor")
    sink.open(make_ctx(out))
    rows = [row("s1", 1.0), row("s2", 2.0), row("s1", 3.0)]
    for tup in rows:
        sink.process(tup)
    sink.on_checkpoint(1)
    # a rollback replays the same rows: the result does not change
    for tup in rows:
        sink.process(tup)
    sink.close()
    assert read_back(out / "task-5") == {"s1": ["s1", 3.0], "s2": ["s2", 2.0]}


def test_reopen_after_crash_replay_converges(tmp_path: Path) -> None:
    out = tmp_path / "kv"
    first = KeyValueSink(out, key="sensor")
    first.open(make_ctx(out))
    first.process(row("s1", 1.0))
    first.on_checkpoint(1)
    first.process(row("s2", 9.0))
    first.close()

    second = KeyValueSink(out, key="sensor")
    second.open(make_ctx(out))
    second.process(row("s2", 9.0))
    second.process(row("s3", 4.0))
    second.close()
    stored = read_back(out / "task-5")
    assert stored == {"s1": ["s1", 1.0], "s2": ["s2", 9.0], "s3": ["s3", 4.0]}


def test_key_must_be_a_field(tmp_path: Path) -> None:
    sink = KeyValueSink(tmp_path / "kv", key="missing")
    with pytest.raises(ValueError, match="missing"):
        sink.open(make_ctx(tmp_path / "kv"))
