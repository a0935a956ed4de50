"""Stand-ins for the container tests: a topology, a recording stream manager, processes."""

from __future__ import annotations

from typing import Any

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import pack_round_robin
from headwater.common.runtime._stmgr import StreamManager


class _Src(Spout):
    outputs = ("x",)

    def next_tuple(self) -> None:
        pass


class _Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


TOPOLOGY = Topology("t").add_spout("src", _Src).add_bolt("sink", _Sink, inputs={"src": shuffle()})


class RecordingStreamManager(StreamManager):
    """A stream manager (container 0 of 1) that keeps what the container sends its instances."""

    def __init__(self) -> None:
        super().__init__(TOPOLOGY, pack_round_robin(TOPOLOGY, 1), 0)
        self.sent: list[tuple[int, Any]] = []

    def send_control(self, task: int, msg: Any) -> None:
        self.sent.append((task, msg))


class FakeProcess:
    """What the supervisor reads of a ``subprocess.Popen``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def kill(self) -> None:
        self.returncode = -9
