"""headwater.common.control._tmaster: the coordinators composed, driven by a manual clock."""

from __future__ import annotations

from pathlib import Path

from headwater import Bolt, Reliability, Spout, Topology, shuffle
from headwater.common._clock import ManualClock
from headwater.common.control import TopologyMaster
from headwater.common.control._recovery import RESTORE_BURST
from headwater.common.plan import pack_round_robin
from headwater.common.wire._states import CheckpointState, TopologyState
from headwater.common.wire.proto import runtime_pb2 as pb


class Source(Spout):
    outputs = ("n",)

    def next_tuple(self) -> None: ...


class Sink(Bolt):
    def process(self, tup: object) -> None: ...


def state(tm: TopologyMaster) -> TopologyState:
    return tm.state  # read anew: mypy would narrow ``tm.state`` across calls


def _running(tmp_path: Path, clock: ManualClock) -> TopologyMaster:
    """An exactly-once topology master with both containers registered and restored."""
    topology = (
        Topology("t", config={"topology.reliability.mode": Reliability.EXACTLY_ONCE.value})
        .add_spout("src", Source)
        .add_bolt("sink", Sink, inputs={"src": shuffle()})
    )
    tm = TopologyMaster(topology, pack_round_robin(topology, 2), tmp_path / "state", clock=clock)
    assert state(tm) == TopologyState.RESTORING
    for c in range(2):
        info = pb.ContainerInfo(container=c, stmgr_address=f"127.0.0.1:{9000 + c}", incarnation=1)
        tm.register(pb.RegisterRequest(topology="t", container=info))
        tm.ack_restore(pb.RestoreAck(topology="t", container=c, epoch=tm.epoch, ok=True))
    assert state(tm) == TopologyState.RUNNING
    return tm


def test_checkpoints_follow_the_interval_and_complete_with_every_ack(tmp_path: Path) -> None:
    clock = ManualClock()
    tm = _running(tmp_path, clock)
    tm.step()
    assert not tm.checkpoints_view()["checkpoints"]  # none yet
    clock.advance(tm.checkpoints.interval_s)
    tm.step()
    rec = tm.checkpoints.in_flight
    assert rec is not None
    for task in (1, 2):
        tm.checkpoints.ack(pb.CheckpointAck(task_id=task, checkpoint_id=rec.id, epoch=tm.epoch))
    assert rec.state == CheckpointState.COMPLETE
    assert tm.checkpoints_view()["latest_complete"] == rec.id


def test_repeated_failures_are_rolled_back_with_growing_delays(tmp_path: Path) -> None:
    clock = ManualClock()
    tm = _running(tmp_path, clock)
    epoch = tm.epoch
    failure = pb.FailureReport(topology="t", container=1, task_id=2, reason="exit 1")
    for _ in range(RESTORE_BURST):
        tm.report_failure(failure)
        assert not tm.recovery.held()
    tm.report_failure(failure)
    assert tm.recovery.held() and tm.epoch == epoch + RESTORE_BURST + 1
    assert tm.summary()["recoveries"] == RESTORE_BURST + 1
    assert tm.summary()["status"]["waiting_for"][0].startswith("a rollback held back 0.5s more")
    clock.advance(0.5)
    tm.step()
    assert not tm.recovery.held() and state(tm) == TopologyState.RESTORING
