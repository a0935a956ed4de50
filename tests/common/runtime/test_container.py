"""A container composes its parts: the command table by reliability, and the hooks they get."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from headwater.common.runtime._container import Container
from headwater.common.runtime._container_config import ContainerConfig
from headwater.common.wire._control import DeadLetterReport, ExceptionReport, LogCommitted
from headwater.common.wire.proto import runtime_pb2 as pb

_TOPOLOGY = """
from headwater import Bolt, Spout, Topology, shuffle


class Src(Spout):
    outputs = ("x",)

    def next_tuple(self):
        pass


class Sink(Bolt):
    def process(self, tup):
        pass


topology = (
    Topology("t", config={{"topology.reliability.mode": "{mode}"}})
    .add_spout("src", Src)
    .add_bolt("sink", Sink, inputs={{"src": shuffle()}})
)
"""


def _container(tmp_path: Path, mode: str) -> Container:
    file = tmp_path / "t.py"
    file.write_text(_TOPOLOGY.format(mode=mode))
    config = ContainerConfig(
        topology_file=str(file),
        container=0,
        containers=1,
        tmaster="127.0.0.1:9",
        workdir=tmp_path,
        state_dir=str(tmp_path / "state"),
    )
    return Container(config)


def test_an_exactly_once_container_handles_all_eight_commands(tmp_path: Path) -> None:
    c = _container(tmp_path, "EFFECTIVELY_ONCE")
    assert c.recovery is not None and c.switch is not None
    assert sorted(c.session.handlers) == [
        "checkpoint",
        "commit",
        "handover",
        "plan",
        "restart_tasks",
        "restore",
        "revision",
        "switch",
    ]
    assert c.local_tasks == [1, 2]
    c.recovery.close()


def test_other_modes_have_no_restore_and_no_live_edits(tmp_path: Path) -> None:
    c = _container(tmp_path, "ATLEAST_ONCE")
    assert c.recovery is None and c.switch is None
    assert sorted(c.session.handlers) == ["checkpoint", "commit", "plan", "restart_tasks"]


def test_a_restart_tasks_command_kills_those_instances_it_runs(tmp_path: Path) -> None:
    c = _container(tmp_path, "ATLEAST_ONCE")
    killed: list[tuple[list[int], str]] = []

    def kill(tasks: Any, reason: str) -> list[int]:
        killed.append((list(tasks), reason))
        return []

    c.supervisor.kill = kill  # type: ignore[method-assign]
    command = pb.Command(restart_tasks=pb.RestartTasks(tasks=[2, 9], reason="slow"))
    asyncio.run(c.session.dispatch(command))
    assert killed == [([2, 9], "slow")]


def test_reports_and_system_messages_reach_their_parts(tmp_path: Path) -> None:
    c = _container(tmp_path, "ATLEAST_ONCE")
    c.on_report(ExceptionReport(task=2, component="sink", message="boom", traceback=""))
    c.on_report(DeadLetterReport(task=1, component="src", message="bad", traceback=""))
    assert c.supervisor.last_error == {2: "sink: boom"}  # a dead letter is no crash
    assert len(c.telemetry.reports) == 2
    c.on_system(LogCommitted(path="p", offsets={"0": 5}))
    assert c.telemetry.log_committed == {"log_committed:p#p0": 5.0}
    assert c.on_outbox(1, "out", 1, b"") is False
    assert c.extra_metrics() == []
