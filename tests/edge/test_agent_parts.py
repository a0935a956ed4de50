"""The agent's parts on fake edge domains: its status figures (``_edge_status.py``) and its
ingest log's retention (``_retention.py``), each given only what it reads."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from headwater.common._health import Health
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.edge import _retention
from headwater.edge._component_status import component_metrics
from headwater.edge._edge_status import (
    add_ingest_backlog,
    add_uplinks,
    backlog,
    outbox_full,
    outbox_metric,
)
from headwater.edge._retention import committed_floor, keep_trimmed


def _tm(**reported: float) -> Any:
    """A topology master whose edge container last reported ``reported``."""
    return SimpleNamespace(metrics={"container:0": dict(reported)} if reported else {})


def test_backlog_is_what_the_outboxes_report_else_what_was_on_disk() -> None:
    tms = {
        "a": _tm(outbox_bytes=100.0, outbox_batches=2.0),
        "b": _tm(),  # not reporting yet: its outbox on disk counts
        "c": _tm(uplink_connected=1.0),  # reporting, but no outbox figures and nothing on disk
    }
    disk = {"b": (40, 1), "a": (999, 9), "gone": (5, 5)}
    assert backlog(tms, disk) == (100 + 40 + 5, 2 + 1 + 5)


def test_an_outbox_at_its_budget_pauses_acknowledgement() -> None:
    tms = {"a": _tm(outbox_bytes=10.0), "b": _tm(outbox_bytes=50.0)}
    assert outbox_full(tms, 50) is True
    assert outbox_full(tms, 51) is False
    assert outbox_metric(tms, "outbox_bytes") == 60.0


def test_uplinks_are_listed_for_the_subgraphs_that_report_one() -> None:
    s = pb.NodeStatus()
    health = Health()
    add_uplinks(
        s, {"a": _tm(uplink_connected=1.0, outbox_bytes=3.0, other=7.0), "b": _tm()}, health
    )
    assert [(u.topology, u.connected, dict(u.metrics)) for u in s.uplinks] == [
        ("a", True, {"uplink_connected": 1.0, "outbox_bytes": 3.0})
    ]
    assert s.metrics["uplink_connected"] == 1.0
    assert not health.has("uplink")
    add_uplinks(pb.NodeStatus(), {"a": _tm(uplink_chained=1.0)}, health)
    assert "the cloud held less than it had confirmed" in health.reasons()[0]


def test_each_subgraph_s_ingest_backlog_is_the_log_past_what_it_committed() -> None:
    prefix = "log_committed:/x/ingest#p"
    tms = {
        "a": _tm(**{prefix + "0": 40.0, prefix + "1": 7.0, "log_committed:/other#p0": 1.0}),
        "b": _tm(**{prefix + "0": 55.0}),  # past the end as the agent read it: 0, not negative
        "c": _tm(),  # not reporting what it committed: no figure
    }
    s = pb.NodeStatus()
    add_ingest_backlog(s, tms, {0: 50, 1: 10}, "/x/ingest")
    assert dict(s.metrics) == {
        "ingest_backlog:a": 10 + 3,
        "ingest_end:a": 60.0,  # the ends of the partitions it reads
        "ingest_backlog:b": 0.0,
        "ingest_end:b": 50.0,
    }
    s = pb.NodeStatus()
    add_ingest_backlog(s, tms, {}, "/x/ingest")  # nothing ingested yet: not known
    assert dict(s.metrics) == {}


def test_each_edge_task_s_counters_go_to_the_master_once_it_reported() -> None:
    plan = SimpleNamespace(
        instances=[
            SimpleNamespace(task_id=1, component="src"),
            SimpleNamespace(task_id=2, component="slow"),
        ]
    )
    tm = SimpleNamespace(
        plan=plan,
        metrics={
            "task:2": {"executed": 5.0, "busy_ns": 9.0, "user:x": 1.0},
            "task:1": {"busy_ns": 1.0},
        },
        edit=None,
        topology=SimpleNamespace(components=[]),
        revlog=SimpleNamespace(records=[]),
    )
    out = component_metrics("t", tm, {})  # type: ignore[arg-type]
    mine = {k: v for k, v in out.items() if k.startswith("edge_task:")}
    assert mine == {
        "edge_task:t/slow/2:executed": 5.0,
        "edge_task:t/slow/2:emitted": 0.0,
        "edge_task:t/slow/2:received": 0.0,
        "edge_task:t/slow/2:busy_ns": 9.0,
        "edge_task:t/slow/2:backpressure_ms": 0.0,
        "edge_task:t/slow/2:in_queue_frames": 0.0,
    }  # task 1 has not reported: left out
    assert out["edge_tasks:t"] == 2.0


def test_the_floor_is_the_lowest_offset_any_subgraph_committed_per_partition() -> None:
    prefix = "log_committed:/x/ingest#p"
    tms = [
        _tm(**{prefix + "0": 40.0, prefix + "1": 7.0, "log_committed:/other#p0": 1.0}),
        _tm(**{prefix + "0": 30.0}),
        _tm(),
    ]
    assert committed_floor(tms, prefix) == {0: 30.0, 1: 7.0}


def test_retention_waits_for_every_ordered_subgraph_then_trims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_retention, "RETENTION_S", 0.0)
    prefix = f"log_committed:{tmp_path.resolve()}#p"
    trims: list[tuple[int, int]] = []
    rounds: list[int] = []
    tms: dict[str, Any] = {"a": _tm(**{prefix + "0": 12.0})}
    ordered = {"a", "b"}  # b ordered, not running yet: nothing is trimmed

    class Log:
        def trim(self, partition: int, before: int) -> None:
            trims.append((partition, before))

    async def scenario() -> None:
        task = asyncio.create_task(
            keep_trimmed(Log(), tmp_path, tms, lambda: ordered, lambda: rounds.append(1))
        )
        deadline = asyncio.get_running_loop().time() + 5.0
        while len(rounds) < 3:
            assert asyncio.get_running_loop().time() < deadline, "retention never ran"
            await asyncio.sleep(0)
        assert trims == []
        tms["b"] = _tm(**{prefix + "0": 9.0})
        while not trims:
            assert asyncio.get_running_loop().time() < deadline, "retention never trimmed"
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(scenario())
    assert trims[0] == (0, 9)


def test_the_ingest_log_says_which_folder_went_and_is_not_made_again(tmp_path: Path) -> None:
    import shutil

    from headwater.edge._ingest_log import IngestLog, LogGone

    disk = IngestLog(tmp_path / "w" / "ingest", 2)
    disk.open()
    counts: dict[int, int] = {}
    disk.append([("sensors/a", b"1"), ("sensors/a", b"2")], 0, counts)
    assert sum(counts.values()) == 2 and len(counts) == 1  # one topic, one partition
    disk.check_present()
    shutil.rmtree(tmp_path / "w" / "ingest" / "p1")
    with pytest.raises(LogGone) as gone:
        disk.check_present()  # appended into unlinked files: not to be acknowledged
    assert disk.failure(gone.value) == (
        f"ingest log {tmp_path / 'w' / 'ingest' / 'p1'} is gone: readings are no longer "
        "acknowledged; restart the agent"
    )
    disk.close()
    shutil.rmtree(tmp_path / "w")
    with pytest.raises(LogGone) as gone:
        disk.open()
    assert disk.logs == []
    assert disk.failure(gone.value) == (
        f"workdir {tmp_path / 'w'} is gone: readings are no longer acknowledged; restart the agent"
    )
