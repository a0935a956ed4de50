"""``InstanceThread`` (the small footprints): a task cut off from its stmgr (``abandon``,
the agent's ``--footprint single``) really ends, and a restore waits for it (bounded)."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle
from headwater.common.api._config import INSTANCE_HIGH_WATER_BYTES, INSTANCE_LOW_WATER_BYTES
from headwater.common.plan import PhysicalPlan
from headwater.common.runtime._threads import InstanceThread
from headwater.common.wire._control import Activate, control_frame
from headwater.common.wire._frame import length_prefix
from tests._wait import wait_for

RELEASE = threading.Event()
ENTERED = threading.Event()


class Flood(Spout):
    """Emits 10 kB values as fast as it may."""

    outputs = ("v",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def next_tuple(self) -> None:
        for _ in range(8):
            self.ctx.emit([b"x" * 10_000])


class Hung(Spout):
    """Stays in user code until ``RELEASE`` (a hang the runtime cannot interrupt)."""

    outputs = ("v",)

    def next_tuple(self) -> None:
        ENTERED.set()
        RELEASE.wait(30)


class ReadsPackage(Spout):
    """Notes, at open, the package, labels and agent id ``live_model`` would read."""

    outputs = ("v",)
    seen: list[tuple[str | None, dict[str, str], str]] = []

    def open(self, ctx: Context) -> None:
        from headwater.common.runtime import _models

        seen = (_models._topology_file(), _models._labels(), _models.agent_id())
        ReadsPackage.seen.append(seen)

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


def _topology(spout: type[Spout]) -> Topology:
    conf = {INSTANCE_HIGH_WATER_BYTES: 64 << 10, INSTANCE_LOW_WATER_BYTES: 32 << 10}
    return (
        Topology("t", config=conf)
        .add_spout("src", spout)  # task 1
        .add_bolt("out", Sink, inputs={"src": shuffle()})  # task 2
    )


@pytest.fixture
def stmgr() -> Iterator[tuple[str, list[socket.socket]]]:
    """A stream manager that activates the spout and then never reads (backpressure)."""
    home = Path(tempfile.mkdtemp(prefix="hw-thr-"))
    path = str(home / "s")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    accepted: list[socket.socket] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        accepted.append(conn)
        frame = control_frame(Activate(), dest=1)
        conn.sendall(length_prefix(frame) + frame)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield path, accepted
    server.close()
    for c in accepted:
        c.close()
    (home / "s").unlink(missing_ok=True)
    home.rmdir()


def _start(
    path: str, spout: type[Spout], package: tuple[str, str, str] = ("", "", "")
) -> InstanceThread:
    topology = _topology(spout)
    killed: list[InstanceThread] = []

    def load() -> tuple[Topology, PhysicalPlan | None]:
        return topology, None

    return InstanceThread(1, path, load, killed.append, package)


def test_a_task_cut_off_while_blocked_on_its_full_queue_ends(
    stmgr: tuple[str, list[socket.socket]],
) -> None:
    path, _ = stmgr
    thread = _start(path, Flood)
    inst = wait_for(lambda: thread._stop.inst, 10, "the instance built")
    wait_for(lambda: inst.gateway.outbox._blocked, 10, "the executor blocked on its full outbox")
    thread.abandon()
    assert thread.poll() is not None  # dead to its supervisor at once
    thread.wait(10)  # a restore waits for it to end (bounded)
    assert not thread._thread.is_alive()  # it ended: not a stray holding its queues
    assert inst.gateway._wake_r.fileno() == inst.gateway._wake_w.fileno() == -1  # no fd leaked


def test_the_wait_for_a_task_hung_in_user_code_is_bounded(
    stmgr: tuple[str, list[socket.socket]],
) -> None:
    RELEASE.clear()
    path, _ = stmgr
    thread = _start(path, Hung)
    assert ENTERED.wait(10)
    try:
        thread.abandon()
        assert thread.wait(0.2) == -9  # never hangs its caller
        assert thread._thread.is_alive()  # a stray until its user code returns
    finally:
        RELEASE.set()
    thread.wait(10)
    assert not thread._thread.is_alive()


def test_a_task_reads_its_own_package_whatever_the_process_environment_says(
    stmgr: tuple[str, list[socket.socket]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hosted (``--footprint single``), the agent's environment is every edge container's:
    another topology's container may set it between a task's start and its open."""
    from headwater.common.runtime.instance import AGENT_ID_ENV, LABELS_ENV, TOPOLOGY_FILE_ENV

    monkeypatch.setenv(TOPOLOGY_FILE_ENV, "/other/topology.py")
    monkeypatch.setenv(LABELS_ENV, '{"site": "other"}')
    monkeypatch.setenv(AGENT_ID_ENV, "gw-other")
    ReadsPackage.seen.clear()
    path, _ = stmgr
    thread = _start(path, ReadsPackage, ("/mine/topology.py", '{"site": "mine"}', "gw-mine"))
    wait_for(lambda: ReadsPackage.seen, 10, "the component opened")
    thread.abandon()
    thread.wait(10)
    assert ReadsPackage.seen == [("/mine/topology.py", {"site": "mine"}, "gw-mine")]


def test_a_task_on_a_thread_reports_its_busy_time_less_its_backpressure(
    stmgr: tuple[str, list[socket.socket]],
) -> None:
    path, _ = stmgr
    started = time.monotonic()
    thread = _start(path, Flood)
    inst = wait_for(lambda: thread._stop.inst, 10, "the instance built")
    wait_for(lambda: inst.gateway.outbox._blocked, 10, "the executor blocked on its full outbox")
    time.sleep(1.0)
    thread.abandon()
    thread.wait(10)
    held = time.monotonic() - started
    # the same counters as a process's: the second and more blocked is not busy time
    assert inst.gateway.outbox.blocked_s >= 0.9
    assert 0 < inst.counts.busy_reported < (held - 0.9) * 1e9
