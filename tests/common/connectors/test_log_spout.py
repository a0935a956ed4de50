"""headwater.common.connectors._log_spout: the replayable durable-log spout."""

from __future__ import annotations

import logging
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from headwater import Topology
from headwater.common.connectors import LogSpout
from headwater.common.connectors._log_spout import append_records
from headwater.common.state import DurableLog, LogOffsetError, State
from headwater.common.state._state import dump_snapshot, load_snapshot
from headwater.common.wire import encode
from headwater.common.wire._control import LogCommitted
from headwater.testing import TestContext

from ..._wait import wait_for

# the reader has two tasks (1 and 2); its user log is "test"
TOPOLOGY = Topology("t").add_spout(
    "reader", partial(LogSpout, "/unused"), parallelism=2, outputs=("record",)
)


def make_ctx(index: int, state: State | None = None) -> TestContext:
    return TestContext(TOPOLOGY, "reader", index=index, state=state, log=logging.getLogger("test"))


def open_spout(path: Path, index: int, state: State | None = None) -> tuple[LogSpout, TestContext]:
    ctx = make_ctx(index, state)
    spout = LogSpout(path, partitions=4)
    spout.open(ctx)
    return spout, ctx


def drain(spout: LogSpout, calls: int = 20) -> bool:
    """Call ``next_tuple`` ``calls`` times; False, to wait on with ``or``."""
    for _ in range(calls):
        spout.next_tuple()
    return False


def write_partitions(path: Path, per_partition: int = 3) -> None:
    for p in range(4):
        first = append_records(path, p, [[p, i, f"p{p}-{i}"] for i in range(per_partition)])
        assert first == 0


def by_partition(emitted: list[list[Any]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for p, i, _ in emitted:
        out.setdefault(p, []).append(i)
    return out


def test_append_records_returns_first_offset(tmp_path: Path) -> None:
    assert append_records(tmp_path, 0, [[1], [2]]) == 0
    assert append_records(tmp_path, 0, [[3]]) == 2
    assert append_records(tmp_path, 1, [[4]]) == 0


def test_reads_only_its_own_partitions_in_order(tmp_path: Path) -> None:
    write_partitions(tmp_path)
    for index, mine in ((0, [0, 2]), (1, [1, 3])):
        spout, ctx = open_spout(tmp_path, index)
        try:
            assert spout.mine == mine
            drain(spout)
            assert by_partition(ctx.values()) == {p: [0, 1, 2] for p in mine}
            assert all(rec[2] == f"p{rec[0]}-{rec[1]}" for rec in ctx.values())
            assert ctx.state["offsets"] == {p: 3 for p in mine}
        finally:
            spout.close()


def test_nothing_past_the_end(tmp_path: Path) -> None:
    write_partitions(tmp_path, per_partition=2)
    spout, ctx = open_spout(tmp_path, 0)
    try:
        drain(spout)
        assert len(ctx.values()) == 4
        drain(spout)
        assert len(ctx.values()) == 4
        assert ctx.state["offsets"] == {0: 2, 2: 2}
    finally:
        spout.close()


class EagerSpout(LogSpout):
    REFRESH_S = 0.0  # catch up with the writer at every call at the end


def test_a_subclass_sets_how_often_a_reader_at_the_end_catches_up(tmp_path: Path) -> None:
    write_partitions(tmp_path, per_partition=1)
    ctx = make_ctx(0)
    spout = EagerSpout(tmp_path, partitions=4)
    spout.open(ctx)
    try:
        drain(spout)  # at the end of both its partitions, each caught up with just now
        assert len(ctx.values()) == 2
        append_records(tmp_path, 0, [[0, 1, "p0-1"]])
        drain(spout, calls=2)  # one call per partition: no interval to wait out
        assert ctx.state["offsets"] == {0: 2, 2: 1}
    finally:
        spout.close()


def test_missing_partition_emits_nothing(tmp_path: Path) -> None:
    append_records(tmp_path, 1, [["only"]])
    spout, ctx = open_spout(tmp_path, 0)
    try:
        drain(spout)
        assert ctx.values() == []
        assert ctx.state["offsets"] == {0: 0, 2: 0}
    finally:
        spout.close()


def test_batches_are_bounded(tmp_path: Path) -> None:
    append_records(tmp_path, 0, [[i] for i in range(10)])
    ctx = make_ctx(0)
    spout = LogSpout(tmp_path, partitions=1)
    spout.READ_BATCH = 4
    spout.open(ctx)
    try:
        spout.next_tuple()
        assert ctx.values() == [[0], [1], [2], [3]]
        drain(spout, 5)
        assert ctx.values() == [[i] for i in range(10)]
        assert ctx.state["offsets"] == {0: 10}
    finally:
        spout.close()


def test_resumes_from_restored_offsets(tmp_path: Path) -> None:
    write_partitions(tmp_path, per_partition=5)
    spout, ctx = open_spout(tmp_path, 0)
    try:
        drain(spout)
        assert ctx.state["offsets"] == {0: 5, 2: 5}
    finally:
        spout.close()

    # the snapshot taken at the last checkpoint had read 2 of p0 and 4 of p2
    snapshot = dump_snapshot(State({"offsets": {0: 2, 2: 4}}), {})
    restored, _, _ = load_snapshot(snapshot)
    spout, ctx = open_spout(tmp_path, 0, restored)
    try:
        drain(spout)
        assert by_partition(ctx.values()) == {0: [2, 3, 4], 2: [4]}
        assert restored["offsets"] == {0: 5, 2: 5}
    finally:
        spout.close()


def test_fresh_state_starts_at_zero_and_keeps_other_offsets(tmp_path: Path) -> None:
    write_partitions(tmp_path, per_partition=1)
    state = State({"offsets": {1: 1}})
    spout, ctx = open_spout(tmp_path, 1, state)
    try:
        assert state["offsets"] == {1: 1, 3: 0}
        drain(spout)
        assert by_partition(ctx.values()) == {3: [0]}
    finally:
        spout.close()


def test_commits_report_the_offsets_of_the_checkpoint_before(tmp_path: Path) -> None:
    write_partitions(tmp_path, per_partition=5)
    spout, ctx = open_spout(tmp_path, 0)
    try:
        spout.next_tuple()  # p2: 5 records
        spout.on_checkpoint(1)
        spout.on_commit(1)
        assert ctx.system_messages == []  # one checkpoint of slack: nothing is trimmable yet
        drain(spout)
        spout.on_checkpoint(2)
        spout.on_commit(2)
        assert ctx.system_messages == [
            LogCommitted(path=str(tmp_path.resolve()), offsets={"0": 0, "2": 5})
        ]
    finally:
        spout.close()


def test_a_reader_behind_the_retention_point_starts_at_what_is_left(tmp_path: Path) -> None:
    write_partitions(tmp_path, per_partition=5)
    writer = DurableLog(tmp_path / "p0")
    writer.trim(3)
    writer.close()
    spout, ctx = open_spout(tmp_path, 0)
    try:
        drain(spout)
        assert by_partition(ctx.values()) == {0: [3, 4], 2: [0, 1, 2, 3, 4]}
    finally:
        spout.close()


def test_a_checkpointed_offset_past_the_end_is_an_error_not_a_wait(tmp_path: Path) -> None:
    """The log was emptied by retention and reopened: it still ends at 5, so a reader at 5
    waits for new records; a log deleted and made again ends at 0: an error that says so."""
    write_partitions(tmp_path, per_partition=5)
    writer = DurableLog(tmp_path / "p0")
    writer.trim(5)
    writer.close()
    writer = DurableLog(tmp_path / "p0")
    spout, ctx = open_spout(tmp_path, 0, State({"offsets": {0: 5, 2: 5}}))
    try:
        drain(spout)
        assert ctx.values() == []
        writer.append([encode([0, 5, "new"])])
        wait_for(lambda: drain(spout) or ctx.values(), 5, "the new record", interval=0.06)
        assert ctx.values() == [[0, 5, "new"]]  # the new reading gets offset 5: read, not lost
    finally:
        spout.close()
        writer.close()
    shutil.rmtree(tmp_path / "p0")
    append_records(tmp_path, 0, [[0, 0, "after the log was replaced"]])
    spout, ctx = open_spout(tmp_path, 0, State({"offsets": {0: 6, 2: 5}}))
    try:
        with pytest.raises(LogOffsetError, match=r"offset 6 is past the log's end 1"):
            wait_for(lambda: drain(spout), 5, "the error", interval=0.06)
    finally:
        spout.close()
    shutil.rmtree(tmp_path / "p0")
    spout, ctx = open_spout(tmp_path, 0, State({"offsets": {0: 6, 2: 5}}))
    try:
        with pytest.raises(LogOffsetError, match=r"partition 0 .* is gone"):
            drain(spout)
    finally:
        spout.close()


def test_a_checkpointed_offset_trimmed_since_is_skipped_loudly_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_partitions(tmp_path, per_partition=5)
    writer = DurableLog(tmp_path / "p0")
    writer.trim(3)
    writer.close()
    spout, ctx = open_spout(tmp_path, 0, State({"offsets": {0: 1, 2: 0}}))
    try:
        with caplog.at_level(logging.INFO, logger="test"):
            drain(spout)
        assert by_partition(ctx.values()) == {0: [3, 4], 2: [0, 1, 2, 3, 4]}
        assert ctx.counters == {"log_records_skipped": 2}
        assert any(
            r.levelno == logging.ERROR and "1..2 were trimmed" in r.getMessage()
            for r in caplog.records
        )
    finally:
        spout.close()
