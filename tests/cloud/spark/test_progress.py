"""A long job's progress lines: a line as each stage starts and ends, with its rows, its time,
the time in all and an estimate of what is left; heartbeats while a stage runs (no Spark)."""

from __future__ import annotations

import threading

import pytest

from headwater.cloud.spark._progress import Progress

from ..._wait import wait_for

STAGES = (("starting", 0.25), ("reading", 0.25), ("fitting", 0.5))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_stage_says_its_rows_time_and_what_is_left() -> None:
    clock, lines = Clock(), list[str]()
    p = Progress(STAGES, lines.append, clock=clock, heartbeat_s=0)
    with p.stage("starting"):
        clock.now += 20
    with p.stage("reading") as stage:
        clock.now += 10
        stage.rows = 1530
    with p.stage("fitting") as stage:
        clock.now += 70
        stage.rows, stage.note = 1122, "(6 sensors)"
    assert lines == [
        "[1/3] starting ...",
        # a quarter of the weight took 20 s: three quarters to go take about 60 s
        "[1/3] starting: in 20.0 s (20.0 s in all, about 60 s left)",
        "[2/3] reading ...",
        "[2/3] reading: 1,530 rows in 10.0 s (30.0 s in all, about 30.0 s left)",
        "[3/3] fitting ...",
        "[3/3] fitting: 1,122 rows in 70 s (6 sensors) (100 s in all)",
    ]
    assert p.elapsed() == 100.0


def test_a_skipped_stage_counts_as_done_and_a_failed_one_says_nothing_more() -> None:
    clock, lines = Clock(), list[str]()
    p = Progress(STAGES, lines.append, clock=clock, heartbeat_s=0)
    with p.stage("reading"):
        clock.now += 10
    assert lines[-1] == "[2/3] reading: in 10.0 s (10.0 s in all, about 10.0 s left)"
    with pytest.raises(RuntimeError), p.stage("fitting"):
        raise RuntimeError("too little history")
    assert lines[-1] == "[3/3] fitting ..."


def test_a_long_stage_beats_with_its_time_and_the_detail() -> None:
    clock, lines = Clock(), list[str]()
    lock = threading.Lock()

    def write(line: str) -> None:
        with lock:
            lines.append(line)

    p = Progress(STAGES, write, clock=clock, heartbeat_s=0.05, detail=lambda: "Spark: 3/4 tasks")
    with p.stage("starting"):
        clock.now += 20
    with p.stage("fitting"):
        clock.now += 30
        wait_for(lambda: len(lines) >= 4, 10, "a heartbeat")
    # fitting half done: 0.75 of the weight in 50 s, 0.25 to go
    assert lines[3] == (
        "[3/3] fitting ... still running, 30.0 s (50.0 s in all, about 16.7 s left; "
        "Spark: 3/4 tasks)"
    )
    assert lines[-1] == "[3/3] fitting: in 30.0 s (50.0 s in all)"


def test_a_silent_progress_writes_nothing() -> None:
    p = Progress(STAGES, None, heartbeat_s=0.01)
    with p.stage("fitting") as stage:
        stage.rows = 5
    assert p.write is None
