"""headwater.common.control._watchdog: a topology master says how long it is stuck and why."""

from __future__ import annotations

from pathlib import Path

from headwater import Bolt, Reliability, Spout, Topology, shuffle
from headwater.common._clock import ManualClock
from headwater.common._health import DEGRADED, FAILED, Health
from headwater.common.control import CrashLoopPolicy, TopologyMaster
from headwater.common.plan import pack_round_robin
from headwater.common.wire.proto import runtime_pb2 as pb


class Source(Spout):
    outputs = ("n",)

    def next_tuple(self) -> None: ...


class Sink(Bolt):
    def process(self, tup: object) -> None: ...


def _master(tmp_path: Path, mode: Reliability, containers: int, **kw: object) -> TopologyMaster:
    topology = (
        Topology("t", config={"topology.reliability.mode": mode.value})
        .add_spout("src", Source)
        .add_bolt("sink", Sink, inputs={"src": shuffle()})
    )
    plan = pack_round_robin(topology, containers)
    return TopologyMaster(topology, plan, tmp_path / "state", **kw)  # type: ignore[arg-type]


def _register(tm: TopologyMaster, container: int, incarnation: int = 1) -> None:
    info = pb.ContainerInfo(
        container=container,
        stmgr_address=f"127.0.0.1:{9000 + incarnation}",
        incarnation=incarnation,
    )
    tm.register(pb.RegisterRequest(topology="t", container=info))


def test_a_restore_says_which_containers_it_waits_for(tmp_path: Path) -> None:
    health = Health("agent-1")
    tm = _master(tmp_path, Reliability.EXACTLY_ONCE, 3, health=health)
    tm.watchdog.stuck_after_s = 0.0
    status = tm.summary()["status"]
    assert status["state"] == "RESTORING"
    assert status["waiting_for"] == [
        "containers [0, 1, 2] have not registered with the topology master"
    ]
    for c in range(3):
        _register(tm, c)
    tm.ack_restore(pb.RestoreAck(topology="t", container=0, epoch=tm.epoch, ok=True))
    tm.metrics["task:2"] = {"connected": 0.0}
    status = tm.metrics_view()["status"]
    assert status["waiting_for"] == [
        "container 1 has not restored checkpoint 0 (epoch 1): task 2 (sink) not connected",
        "container 2 has not restored checkpoint 0 (epoch 1)",  # empty: nothing to connect
    ]
    assert status["for_s"] >= 0.0
    tm.watchdog.tick()  # the node's health shows it
    assert health.level is DEGRADED
    (reason,) = health.reasons()
    assert reason.startswith("t: stuck: RESTORING for over 0s: ")
    assert "container 1 has not restored checkpoint 0" in reason
    for c in (1, 2):
        tm.ack_restore(pb.RestoreAck(topology="t", container=c, epoch=tm.epoch, ok=True))
    status = tm.summary()["status"]
    assert (status["state"], status["waiting_for"]) == ("RUNNING", [])
    tm.watchdog.tick()
    assert health.state == "ok"


def test_a_container_that_acknowledges_the_restore_is_not_called_silent(tmp_path: Path) -> None:
    # A container thawed after a long stop acknowledges the restore before its next
    # heartbeat: the restore is over and nothing waits, so no silence is reported.
    clock = ManualClock()
    tm = _master(tmp_path, Reliability.EXACTLY_ONCE, 2, clock=clock)
    for c in range(2):
        _register(tm, c)
    clock.advance(10.0)
    assert tm.summary()["status"]["waiting_for"] == [
        "container 0 has sent no heartbeat for 10s",
        "container 1 has sent no heartbeat for 10s",
        "container 0 has not restored checkpoint 0 (epoch 1): task 1 (src) not connected",
        "container 1 has not restored checkpoint 0 (epoch 1): task 2 (sink) not connected",
    ]
    tm.heartbeat(pb.Heartbeat(topology="t", container=0))
    tm.ack_restore(pb.RestoreAck(topology="t", container=0, epoch=tm.epoch, ok=True))
    tm.ack_restore(pb.RestoreAck(topology="t", container=1, epoch=tm.epoch, ok=True))
    status = tm.summary()["status"]
    assert (status["state"], status["waiting_for"]) == ("RUNNING", [])
    tm.ack_restore(pb.RestoreAck(topology="t", container=7, epoch=tm.epoch, ok=True))
    assert 7 not in tm.last_heartbeat  # only a registered container counts


def test_a_checkpoint_in_flight_names_the_tasks_it_lacks(tmp_path: Path) -> None:
    tm = _master(tmp_path, Reliability.EXACTLY_ONCE, 2)
    for c in range(2):
        _register(tm, c)
        tm.ack_restore(pb.RestoreAck(topology="t", container=c, epoch=tm.epoch, ok=True))
    rec = tm.trigger_checkpoint()
    tm.checkpoints.ack(
        pb.CheckpointAck(topology="t", container=0, task_id=1, checkpoint_id=rec.id, epoch=tm.epoch)
    )
    rec._t0 -= 30  # in flight for a while
    (why,) = tm.summary()["status"]["waiting_for"]
    assert why == (
        f"checkpoint {rec.id} in flight for 30s: no snapshot yet from tasks 2 (sink, container 1)"
    )
    assert tm.watchdog.faults()[0][:2] == ("t: checkpoints failing", DEGRADED)


def test_failures_of_one_component_become_a_crash_loop_in_every_mode(tmp_path: Path) -> None:
    for mode in (Reliability.AT_LEAST_ONCE, Reliability.EXACTLY_ONCE):
        health = Health("agent-1")
        tm = _master(
            tmp_path / mode.value,
            mode,
            1,
            health=health,
            crash_loop=CrashLoopPolicy(failures=3, window_s=60),
        )
        _register(tm, 0)
        tm.exceptions.append(
            {
                "task": 2,
                "component": "sink",
                "message": "RuntimeError: no model",
                "traceback": "Traceback...\nRuntimeError: no model",
                "time_ms": 0,
            }
        )
        why = "task 2 exited with 1 (sink: RuntimeError: no model)"
        for _ in range(3):
            report = pb.FailureReport(topology="t", container=0, task_id=2, reason=why)
            tm.report_failure(report)
        (loop,) = tm.summary()["status"]["crash_loops"]
        assert (loop["key"], loop["component"], loop["task"], loop["failures"]) == (
            "component 'sink' (task 2)",
            "sink",
            2,
            3,
        )
        assert loop["exception"] == "RuntimeError: no model"
        assert loop["traceback"].endswith("RuntimeError: no model")
        tm.watchdog.tick()
        assert health.level is FAILED
        assert health.reasons()[0].startswith(
            "t: crash loop: component 'sink' (task 2): failing again and again (3 failures within "
            "60s); last: task 2 exited with 1"
        )
        # a restarted container counts for the container
        _register(tm, 0, incarnation=2)
        assert tm.summary()["status"]["crash_loops"][0]["key"] == "component 'sink' (task 2)"
