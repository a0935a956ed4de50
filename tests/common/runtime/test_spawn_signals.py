"""A Ctrl-C that lands while a child is forked reaches the caller, and the child can still be
stopped: ``spawn`` holds SIGINT and SIGTERM across the fork and unblocks them in the child.

Without the hold, a Python handler that raises ran inside the fork's hooks (logging's
``_releaseLock``), where its exception was printed and dropped: ``headwater run`` went on
starting after a Ctrl-C and wrote "Exception ignored" to its terminal."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from headwater.common.runtime import _procs
from headwater.common.runtime._procs import spawn


class Stopped(Exception):
    pass


def _raise(signum: int, frame: object) -> None:
    raise Stopped(signum)


@pytest.fixture
def raising_sigint() -> Iterator[None]:
    old = signal.signal(signal.SIGINT, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_sigint_while_the_stops_are_held_is_raised_once_they_are_released(
    raising_sigint: None,
) -> None:
    reached = []
    with pytest.raises(Stopped), _procs._stops_held():
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("after the kill")  # the handler waits for the release
    assert reached == ["after the kill"]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_a_spawned_child_blocks_no_signal(raising_sigint: None) -> None:
    blocked = "import signal, sys; sys.exit(len(signal.pthread_sigmask(signal.SIG_BLOCK, [])))"
    with _procs._stops_held():  # as the parent is when it forks
        child = spawn(["-c", blocked])
    assert child.wait(30) == 0  # SIGTERM stops it, SIGINT reaches its handler


def test_sigterm_stops_a_spawned_child() -> None:
    proc = spawn(["-c", "import time; time.sleep(60)"])
    try:
        proc.terminate()
        assert proc.wait(30) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
