"""A stream manager tells its container through StreamManagerHooks, with typed messages."""

from __future__ import annotations

import asyncio

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import pack_round_robin
from headwater.common.runtime._hooks import NoHooks
from headwater.common.runtime._ipc import InstanceConnection
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.wire import Kind, encode_frame, state_frame
from headwater.common.wire._control import (
    ControlMessage,
    DeadLetterReport,
    ExceptionReport,
    LogCommitted,
    control_frame,
)


class _Src(Spout):
    def next_tuple(self) -> None:
        pass


class _Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


TOPOLOGY = Topology("t").add_spout("src", _Src).add_bolt("sink", _Sink, inputs={"src": shuffle()})


class _Hooks(NoHooks):
    def __init__(self) -> None:
        self.reports: list[ExceptionReport | DeadLetterReport] = []
        self.system: list[ControlMessage] = []
        self.states: list[tuple[int, int, bytes]] = []

    def on_report(self, report: ExceptionReport | DeadLetterReport) -> None:
        self.reports.append(report)

    def on_system(self, msg: ControlMessage) -> None:
        self.system.append(msg)

    def on_state(self, task: int, checkpoint: int, blob: bytes) -> None:
        self.states.append((task, checkpoint, blob))


def test_instance_messages_reach_the_hooks_typed() -> None:
    async def run() -> None:
        hooks = _Hooks()
        stmgr = StreamManager(TOPOLOGY, pack_round_robin(TOPOLOGY, 1), 0, hooks)
        conn = InstanceConnection(stmgr)
        crash = ExceptionReport(1, "sink", "ValueError: x", "tb")
        dead = DeadLetterReport(1, "sink", "dead letter: x", "")
        committed = LogCommitted("/log", {"0": 5})
        for msg in (crash, dead, committed):
            stmgr.on_local_frame(conn, control_frame(msg, src=1))
        stmgr.on_local_frame(conn, encode_frame(Kind.CONTROL, -1, 1, 0, b"", b"\xc1"))  # dropped
        stmgr.on_local_frame(conn, state_frame(1, 3, b"blob"))
        assert hooks.reports == [crash, dead]
        assert hooks.system == [committed]
        assert hooks.states == [(1, 3, b"blob")]
        assert ("task:1", "exceptions", 1.0) in stmgr.metrics()

    asyncio.run(run())
