"""The supervisor restarts a dead instance after its backoff, or leaves it for a rollback."""

from __future__ import annotations

import subprocess
from typing import cast

from headwater.common._clock import ManualClock
from headwater.common.runtime._ipc import InstanceConnection
from headwater.common.runtime._supervisor import HEALTHY_AFTER_S, RESTART_POLICY, Supervisor

from ._container_kit import FakeProcess, RecordingStreamManager


class _Launcher:
    def __init__(self) -> None:
        self.started: list[int] = []
        self.procs: list[FakeProcess] = []

    def __call__(self, task: int) -> subprocess.Popen[bytes]:
        self.started.append(task)
        self.procs.append(FakeProcess(1000 + len(self.procs)))
        return cast("subprocess.Popen[bytes]", self.procs[-1])


def _supervisor(restart: bool) -> tuple[Supervisor, _Launcher, RecordingStreamManager, ManualClock]:
    launch, stmgr, clock = _Launcher(), RecordingStreamManager(), ManualClock()
    return Supervisor(launch, stmgr, restart=restart, clock=clock), launch, stmgr, clock


def test_a_dead_instance_is_reported_once_and_restarted_when_its_delay_is_due() -> None:
    sup, launch, stmgr, clock = _supervisor(restart=True)
    sup.start(1)
    assert sup.check() == []
    launch.procs[-1].returncode = 3
    assert sup.check() == [(1, 3)]
    assert stmgr.restarts[1] == 1
    clock.advance(RESTART_POLICY.initial)  # the first delay is at most the initial one
    assert sup.check() == []
    assert launch.started == [1, 1]
    assert sup.pids() == {1: launch.procs[-1].pid}


def test_delays_grow_up_to_the_policy_maximum() -> None:
    sup, launch, _, clock = _supervisor(restart=True)
    sup.start(1)
    for _ in range(12):
        launch.procs[-1].returncode = 1
        sup.check()
        clock.advance(RESTART_POLICY.maximum)
        sup.check()
    assert len(launch.started) == 13  # never waited past the maximum


def test_exactly_once_leaves_the_dead_for_a_rollback_and_names_it_at_every_look() -> None:
    sup, launch, stmgr, clock = _supervisor(restart=False)
    sup.start(1)
    launch.procs[-1].returncode = -9
    assert sup.check() == [(1, -9)]
    clock.advance(60)
    assert sup.check() == [(1, -9)]
    assert launch.started == [1]
    assert stmgr.restarts == {}  # counted by the container, once per epoch
    assert [p.pid for p in sup.kill_all()] == [launch.procs[-1].pid]
    assert sup.procs == {}


def test_the_failure_reason_carries_the_last_exception_once() -> None:
    sup, _, _, _ = _supervisor(restart=True)
    sup.last_error[2] = "sink: boom"
    assert sup.failure_reason(2, 1) == "task 2 exited with 1 (sink: boom)"
    assert sup.failure_reason(2, 1) == "task 2 exited with 1"


def test_a_task_up_and_connected_for_a_while_starts_its_backoff_anew() -> None:
    sup, launch, stmgr, clock = _supervisor(restart=True)
    sup.start(1)
    for _ in range(5):  # the delay grows
        launch.procs[-1].returncode = 1
        sup.check()
        clock.advance(RESTART_POLICY.maximum)
        sup.check()
    backoff = sup._backoff[1]
    assert backoff.failures == 5
    stmgr.conns[1] = InstanceConnection(stmgr)  # connected, and heard from just now
    clock.advance(HEALTHY_AFTER_S)
    sup.check()
    assert backoff.failures == 0


def test_a_restart_on_request_kills_the_tasks_it_runs_which_then_restart_as_dead_ones() -> None:
    sup, launch, _, clock = _supervisor(restart=True)
    sup.start(1)
    sup.start(2)
    assert sup.kill([2, 7], "slow instance") == [2]  # task 7 runs elsewhere
    assert launch.procs[1].returncode == -9 and launch.procs[0].returncode is None
    dead = sup.check()
    assert [t for t, _ in dead] == [2]
    assert "restarted on request: slow instance" in sup.failure_reason(2, -9)
    clock.advance(RESTART_POLICY.initial)
    sup.check()
    assert launch.started == [1, 2, 2]
