"""Hygiene for every test: a private state dir, a clean environment, no stray processes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import psutil
import pytest

from ._garage import Garage
from ._ports import free_port
from ._timeline import pytest_runtest_protocol  # noqa: F401  (a hook: HEADWATER_TEST_TIMELINE)
from ._wait import wait_for
from ._workers import KEPT
from ._zookeeper import ZooKeeper

# A suite started in the background of a non-interactive shell has SIGINT ignored, which every
# command a test starts would inherit (Python keeps an ignored SIGINT), so the tests that end a
# command with Ctrl-C need SIGINT as a terminal's foreground job has it: a handler here resets
# to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# what a fixture shows when a test that uses it fails: pytest never throws the test's
# exception into a fixture's generator, and what a fixture prints at its teardown is
# shown nowhere, so the failing report carries it as a section of its own
_LOGS = pytest.StashKey[list[tuple[str, Callable[[], str]]]]()


def show_on_failure(
    node: pytest.Item | pytest.Collector, title: str, text: Callable[[], str]
) -> None:
    """When a test under ``node`` (the test, or its module for a module's fixture) fails,
    its report shows ``text()`` under ``title``."""
    node.stash.setdefault(_LOGS, []).append((title, text))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and report.when in ("setup", "call"):
        for node in item.listchain():
            for title, text in node.stash.get(_LOGS, []):
                try:
                    report.sections.append((title, text()))
                except Exception as e:  # the logs are help, never the failure
                    report.sections.append((title, f"(could not be read: {e!r})"))
    return report


_CLEARED = (
    "HEADWATER_STATE_DIR",
    "HEADWATER_LOG_LEVEL",
    "HEADWATER_KEEP_WORKDIR",
    "HEADWATER_TOKEN",
    "HEADWATER_CACERT",
)


@pytest.fixture(autouse=True)
def clean_environ(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Clear Headwater's variables and give each test its own state dir."""
    saved = {k: os.environ.pop(k) for k in _CLEARED if k in os.environ}
    os.environ["HEADWATER_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    try:
        yield
    finally:
        os.environ.pop("HEADWATER_STATE_DIR", None)
        os.environ.update(saved)


@pytest.fixture(autouse=True)
def no_leaked_processes() -> Iterator[None]:
    """Fail a test that leaves child processes running (but those the worker keeps on
    purpose, ``tests/_workers.py``'s ``KEPT``, and theirs)."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    kept = _kept()
    leaked = [p for p in me.children(recursive=True) if p.pid not in before | kept]
    _, alive = psutil.wait_procs(leaked, timeout=10)
    for p in alive:
        p.kill()
    assert not alive, f"test leaked processes: {[_described(p) for p in alive]}"


def _kept() -> set[int]:
    kept: set[int] = set()
    for pid in KEPT:
        with contextlib.suppress(psutil.Error):  # gone: its own fixture notices
            kept |= {pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))}
    return kept


def _described(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:  # a zombie has no command line left
        return f"pid {p.pid}"


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


def start_mosquitto(conf: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """Mosquitto with ``conf`` (listening on loopback ``port``), once it accepts connections."""
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    with open(log, "wb") as out:
        proc = subprocess.Popen([binary, "-c", str(conf)], stdout=out, stderr=out)

    def accepting() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"mosquitto did not start: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False

    wait_for(accepting, 10, f"mosquitto accepting on port {port}", interval=0.02)
    return proc


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A real Mosquitto broker on a loopback port; yields (host, port)."""
    port = free_port()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(
        f"listener {port} 127.0.0.1\n"
        "allow_anonymous true\n"
        "persistence false\n"
        "max_queued_messages 0\n"  # keep a whole backlog for a paused subscriber
        "max_inflight_messages 20\n"
    )
    proc = start_mosquitto(conf, port, tmp_path / "mosquitto.log")
    try:
        yield ("127.0.0.1", port)
    finally:
        proc.terminate()
        proc.wait(5)


@pytest.fixture
def zookeeper(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ZooKeeper]:
    """A real standalone ZooKeeper on a loopback port (Debian's package, never skipped: the
    install script installs it), stopped at the end; its log shown if the test fails."""
    server = ZooKeeper(tmp_path / "zookeeper")
    show_on_failure(request.node, "zookeeper log", lambda: server.log_text()[-6000:])
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def garage(tmp_path: Path) -> Iterator[Garage]:
    """A real single-node Garage (an S3-compatible object store) on loopback ports, with a
    key allowed on a bucket (``tests/_garage.py``); stopped after the test."""
    server = Garage(tmp_path / "garage")
    try:
        server.start()
        yield server
    finally:
        server.stop()
