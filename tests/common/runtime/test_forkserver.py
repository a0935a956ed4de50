"""The fork server: instance processes forked from one that imported the instance's code once.

Each is a real process that runs ``instance.main`` with its arguments, writes to its own log,
reports its exit status as ``Popen`` does (negative for a signal), and dies with the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from headwater.common.runtime._forkserver import KILLED, ForkServer

WORDCOUNT = Path(__file__).resolve().parents[3] / "examples" / "iot" / "wordcount.py"


@pytest.fixture
def server() -> Iterator[ForkServer]:
    forks = ForkServer.start()
    yield forks
    forks.close()


def _args(sock: str, task: int = 1) -> list[str]:
    return ["--topology-file", str(WORDCOUNT), "--task", str(task), "--socket", sock]


def test_an_instance_that_fails_at_once_exits_1_with_its_traceback_in_its_log(
    server: ForkServer, tmp_path: Path
) -> None:
    log = tmp_path / "task-1.log"
    proc = server.launch(_args(str(tmp_path / "no.sock")), str(log))
    assert proc.wait(30) == 1
    assert proc.poll() == 1 and proc.returncode == 1
    assert "FileNotFoundError" in log.read_text()


def test_a_running_instance_is_a_child_of_the_server_and_is_killed_by_its_pid(
    server: ForkServer, tmp_path: Path
) -> None:
    path = str(tmp_path / "c.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    try:
        proc = server.launch(_args(path, task=3), str(tmp_path / "task-3.log"))
        conn, _ = listener.accept()  # it connected: it runs, waiting for its stmgr
        child = psutil.Process(proc.pid)
        assert child.ppid() == server._proc.pid
        assert child.cmdline()[0] != ""  # a process of its own
        assert proc.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(0.05)
        proc.kill()
        assert proc.wait(30) == -signal.SIGKILL
        proc.kill()  # reaped: nothing to signal, no error
        conn.close()
    finally:
        listener.close()


def test_a_server_that_dies_takes_its_instances_with_it(server: ForkServer, tmp_path: Path) -> None:
    path = str(tmp_path / "c.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    try:
        proc = server.launch(_args(path), str(tmp_path / "task-1.log"))
        conn, _ = listener.accept()
        pid = proc.pid
        os.kill(server._proc.pid, signal.SIGKILL)
        assert proc.wait(30) == KILLED
        assert not server.alive
        with pytest.raises(OSError):
            server.launch(_args(path), str(tmp_path / "task-2.log"))
        psutil.wait_procs([psutil.Process(pid)], timeout=30)  # dies with its server
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        conn.close()
    finally:
        listener.close()


def test_the_server_imports_what_an_instance_does_and_no_grpc() -> None:
    """Its forks are instances: what it imported, they have (no gRPC, as an instance)."""
    code = (
        "import sys\n"
        "import headwater.common.runtime._forkserver\n"
        "from headwater.common.runtime import instance\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'rocksdict')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
