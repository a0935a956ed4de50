"""A heartbeat carries the metrics and the reports since the last one; undelivered, they wait."""

from __future__ import annotations

from headwater.common._clock import ManualClock
from headwater.common.runtime._telemetry import KEEP_REPORTS, Telemetry
from headwater.common.wire._control import DeadLetterReport, ExceptionReport, LogCommitted

from ._container_kit import RecordingStreamManager


def _telemetry() -> Telemetry:
    clock = ManualClock(wall=1_700_000_000.0)
    return Telemetry("t", 0, 7, RecordingStreamManager(), lambda: {1: 4242}, clock)


def test_reports_become_protobuf_at_the_heartbeat_and_leave_with_it() -> None:
    t = _telemetry()
    t.add_report(ExceptionReport(task=1, component="sink", message="boom", traceback="tb"))
    t.add_report(DeadLetterReport(task=1, component="sink", message="bad", traceback=""))
    beat, reports = t.heartbeat()
    assert (beat.topology, beat.container, beat.incarnation) == ("t", 0, 7)
    assert [(r.task_id, r.message, r.time_ms) for r in beat.exceptions] == [
        (1, "boom", 1_700_000_000_000),
        (1, "bad", 1_700_000_000_000),
    ]
    assert len(reports) == 2
    assert t.heartbeat()[0].exceptions == []


def test_metrics_name_the_pids_the_epoch_and_committed_log_offsets() -> None:
    t = _telemetry()
    t.note_log_committed(LogCommitted(path="/var/log/in", offsets={"0": 12}))
    metrics = {(m.scope, m.name): m.value for m in t.heartbeat()[0].metrics}
    assert metrics[("task:1", "pid")] == 4242
    assert metrics[("container:0", "epoch")] == 0
    assert metrics[("container:0", "log_committed:/var/log/in#p0")] == 12


def test_reports_of_an_undelivered_heartbeat_go_with_the_next_keeping_the_last_ones() -> None:
    t = _telemetry()
    for i in range(KEEP_REPORTS + 5):
        t.add_report(ExceptionReport(task=1, component="c", message=str(i), traceback=""))
    _, reports = t.heartbeat()
    t.add_report(ExceptionReport(task=1, component="c", message="new", traceback=""))
    t.give_back(reports)
    messages = [r.message for r in t.heartbeat()[0].exceptions]
    assert len(messages) == KEEP_REPORTS
    assert messages[-1] == "new"
