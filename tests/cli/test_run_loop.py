"""headwater._run_loop: a Ctrl-C during start-up stops the run, even when it lands where
Python cannot raise its exception (an at-fork hook, a ``__del__``), and says nothing more.

``headwater run`` once printed "Exception ignored in: <function _releaseLock>" and a traceback
when Ctrl-C came while a child was forked: the stop raised inside logging's at-fork hook was
dropped there, and the run went on as if no Ctrl-C had come."""

from __future__ import annotations

import gc
import os
import signal
import sys

import pytest

from headwater._run_loop import run_until_stopped


class _SignalledWhileCollected:
    """Sends SIGINT to this process from its ``__del__``, where Python reports and drops
    whatever the handler raises."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, between bytecodes
            pass


def _run(start: object, steps: list[str]) -> int:
    return run_until_stopped(
        start,  # type: ignore[arg-type]
        lambda: steps.append("stop"),
        None,
        lambda: steps.append("tick"),
        None,
        lambda: steps.append("final"),
        lambda: steps.append("announce"),
    )


def test_a_ctrl_c_dropped_where_it_landed_still_stops_the_start_up_silently(
    capsys: pytest.CaptureFixture[str],
) -> None:
    steps: list[str] = []
    handler = signal.getsignal(signal.SIGINT)

    def start() -> None:
        _SignalledWhileCollected()  # collected at once: its __del__ runs inside start
        gc.collect()
        steps.append("started")

    assert _run(start, steps) == 0
    assert steps == ["started", "stop"]  # never announced, never ticked
    out, err = capsys.readouterr()
    assert (out, err) == ("stopping...\nstopped during start-up\n", "")
    assert signal.getsignal(signal.SIGINT) is handler  # given back


def test_a_ctrl_c_during_start_up_interrupts_it(capsys: pytest.CaptureFixture[str]) -> None:
    steps: list[str] = []

    def start() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass
        steps.append("not reached")

    assert _run(start, steps) == 0
    assert steps == ["stop"]
    assert capsys.readouterr() == ("stopping...\nstopped during start-up\n", "")


def test_another_exception_where_none_propagates_is_still_reported(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reported: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    class Broken:
        def __del__(self) -> None:
            raise ValueError("a user's __del__")

    def start() -> None:
        Broken()
        gc.collect()
        _SignalledWhileCollected()
        gc.collect()

    assert _run(start, []) == 0
    assert [repr(e) for e in reported] == [repr(ValueError("a user's __del__"))]
    assert sys.unraisablehook is not None and capsys.readouterr().err == ""
