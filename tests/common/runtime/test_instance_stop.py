"""An instance stopped before its threads started (SIGTERM while its topology loads: a run
stopped during its start-up) ends with status 0 and a clean log: no join of a gateway thread
that never started ("cannot join thread before it is started"), no socket left open."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import PhysicalPlan
from headwater.common.runtime._threads import InstanceThread
from headwater.common.runtime.instance import StopFlag, run_task
from tests._wait import wait_for


class Quiet(Spout):
    outputs = ("v",)

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


def _topology() -> Topology:
    return Topology("t").add_spout("src", Quiet).add_bolt("out", Sink, inputs={"src": shuffle()})


class Stmgr:
    """A stream manager's socket that reads what a task sends until the task closes it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(4)
        self.received = bytearray()
        self.closed = threading.Event()  # the task closed its end
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            while data := conn.recv(65536):
                self.received += data
        self.closed.set()

    def close(self) -> None:
        self.server.close()
        self._thread.join(5)


@pytest.fixture
def stmgr() -> Iterator[Stmgr]:
    home = Path(tempfile.mkdtemp(prefix="hw-stop-"))  # short: a Unix socket's path
    s = Stmgr(str(home / "s"))
    yield s
    s.close()
    (home / "s").unlink(missing_ok=True)
    home.rmdir()


def test_a_task_stopped_while_it_loads_ends_cleanly(stmgr: Stmgr) -> None:
    stop = StopFlag()

    def load() -> tuple[Topology, PhysicalPlan | None]:
        stop.set()  # SIGTERM arrives while the topology loads: before any thread starts
        return _topology(), None

    assert run_task(1, stmgr.path, load, stop) == 0
    inst = stop.inst
    assert inst is not None
    assert not inst.gateway.is_alive()
    assert inst.gateway._wake_r.fileno() == inst.gateway._wake_w.fileno() == -1  # no fd leaked
    assert stmgr.closed.wait(5)  # its socket to the stmgr closed
    assert stmgr.received == b""  # it never said hello: it never ran


def test_a_task_thread_stopped_while_it_loads_ends_with_status_0(
    stmgr: Stmgr, caplog: pytest.LogCaptureFixture
) -> None:
    """The small footprint: the same stop on a task's thread, as its supervisor sees it."""
    loading, release = threading.Event(), threading.Event()

    def load() -> tuple[Topology, PhysicalPlan | None]:
        loading.set()
        assert release.wait(10)
        return _topology(), None

    killed: list[InstanceThread] = []
    thread = InstanceThread(1, stmgr.path, load, killed.append)
    assert loading.wait(10)
    thread.terminate()
    release.set()
    assert thread.wait(10) == 0
    assert thread.poll() == 0
    assert not killed
    assert "ended unexpectedly" not in caplog.text
    assert stmgr.closed.wait(5)


SLOW_TOPOLOGY = """
import os
import time
from pathlib import Path

from headwater import Bolt, Spout, Topology, shuffle


class Quiet(Spout):
    outputs = ("v",)

    def next_tuple(self):
        pass


class Sink(Bolt):
    def process(self, tup):
        pass


Path(os.environ["LOADING_FILE"]).touch()
deadline = time.monotonic() + 30
while not Path(os.environ["RELEASE_FILE"]).exists() and time.monotonic() < deadline:
    time.sleep(0.02)
topology = Topology("t").add_spout("src", Quiet).add_bolt("out", Sink, inputs={"src": shuffle()})
"""


def test_an_instance_process_stopped_while_it_loads_logs_no_error(
    stmgr: Stmgr, tmp_path: Path
) -> None:
    """What a task log of a run stopped during its start-up shows: nothing but a clean end."""
    (tmp_path / "slow.py").write_text(SLOW_TOPOLOGY)
    loading, release = tmp_path / "loading", tmp_path / "release"
    log = tmp_path / "task-1.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headwater.common.runtime.instance",
                "--topology-file",
                str(tmp_path / "slow.py"),
                "--task",
                "1",
                "--socket",
                stmgr.path,
            ],
            env={**os.environ, "LOADING_FILE": str(loading), "RELEASE_FILE": str(release)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(loading.exists, 60, "the instance loading its topology")
        proc.send_signal(signal.SIGTERM)  # what its container sends when the run stops
        release.touch()
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text(errors="replace")
    assert "cannot join thread" not in text
    assert "Traceback" not in text
    assert stmgr.closed.wait(5)
