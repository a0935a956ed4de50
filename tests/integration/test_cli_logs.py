"""`headwater logs` of a local run (`headwater run`): the whole run's logs, one container's,
one instance's, `--follow` until the run ends, the same after it ended, and a name it does
not know."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from headwater.cloud.local import state_dir

from ._support import TOPOLOGIES, wait_for

LOGGED = TOPOLOGIES / "logged.py"
RUN_OPTIONS = ("--containers", "2", "--duration", "20", "--quiet")
pytestmark = pytest.mark.cluster


def _env() -> dict[str, str]:
    """This machine's environment without a master: `headwater logs` reads local runs."""
    return {k: v for k, v in os.environ.items() if k != "HEADWATER_MASTER"}


def _logs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", "logs", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _sections(out: str) -> dict[str, list[str]]:
    """Each ``==> HEADER <==`` printed, with the lines under it, in order."""
    sections: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in out.splitlines():
        if line.startswith("==> ") and line.endswith(" <=="):
            lines = sections.setdefault(line, [])
        elif line:  # --follow's blank line before a header it prints again
            lines.append(line)
    return sections


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_logs_of_a_local_run_while_it_runs_and_after_it_ended(tmp_path: Path) -> None:
    run = subprocess.Popen(
        [sys.executable, "-m", "headwater", "run", str(LOGGED), *RUN_OPTIONS],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    follow: subprocess.Popen[str] | None = None
    try:
        assert run.stdout is not None
        said = iter(run.stdout.readline, "")
        workdir = Path(next(line for line in said if line.startswith("  logs: "))[8:].strip())
        tmaster, c0, c1 = (
            workdir / f for f in ("tmaster.log", "container-0.log", "container-1.log")
        )
        t1, t2, t3 = (workdir / f"task-{t}.log" for t in (1, 2, 3))

        def echoed() -> bool:
            return (
                all(p.exists() and "took" in p.read_text() for p in (t2, t3))
                and "logged: tick 5\n" in t1.read_text()
            )

        wait_for(echoed, 60, "both echo tasks to log what they took")

        # while it runs: every log, the topology master's first, then each container's
        # and its instances' (round robin: tasks 1 and 3 in container 0, task 2 in 1)
        whole = _logs("logged", "--tail", "10000")
        assert (whole.returncode, whole.stderr) == (0, ""), whole.stderr
        sections = _sections(whole.stdout)
        assert list(sections) == [
            f"==> logged: topology master log ({tmaster}) <==",
            f"==> logged/0: container log ({c0}) <==",
            f"==> logged/0: instance log task-1.log ({t1}) <==",
            f"==> logged/0: instance log task-3.log ({t3}) <==",
            f"==> logged/1: container log ({c1}) <==",
            f"==> logged/1: instance log task-2.log ({t2}) <==",
        ]
        shown = list(sections.values())
        # containers start beside the master and may register before it logs its ports
        assert any("topology master for 'logged'" in line for line in shown[0])
        assert any("task 1 (ticks) connected" in line for line in shown[1])
        assert any("task 2 (echo) connected" in line for line in shown[4])
        assert shown[2][:3] == ["logged: ticks task 1 open", "logged: tick 1", "logged: tick 2"]
        for task, lines in ((3, shown[3]), (2, shown[5])):
            assert lines[0] == f"logged: echo task {task} open"
            assert lines[1:] and all(
                re.fullmatch(rf"logged: echo task {task} took \d+", line) for line in lines[1:]
            ), lines

        one = _logs("logged/1", "--tail", "10000")
        assert one.returncode == 0, one.stderr
        assert list(_sections(one.stdout)) == [
            f"==> logged/1: container log ({c1}) <==",
            f"==> logged/1: instance log task-2.log ({t2}) <==",
        ]

        instance = _logs("logged/task-3", "--tail", "2")
        assert instance.returncode == 0, instance.stderr
        header, *last = instance.stdout.splitlines()
        assert header == f"==> logged/0: instance log task-3.log ({t3}) <=="
        assert len(last) == 2
        assert all(re.fullmatch(r"logged: echo task 3 took \d+", line) for line in last), last

        # --follow: the last line, then every line the spout logs, until the run ends
        follow = subprocess.Popen(
            [sys.executable, "-m", "headwater", "logs", "logged/task-1", "-f", "--tail", "1"],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, _ = run.communicate(timeout=60)
        followed, follow_err = follow.communicate(timeout=30)
    finally:
        for proc in (run, follow):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert run.returncode == 0, out
    assert out.endswith(f"stopped\nlogs kept in {workdir}\n")
    assert (follow.returncode, follow_err) == (0, "")
    header, *lines = followed.splitlines()
    assert header == f"==> logged/0: instance log task-1.log ({t1}) <=="
    ticks = _lines(t1)
    assert len(lines) > 10  # it went on printing the ticks logged after it started
    assert lines == ticks[-len(lines) :]  # each once, in order, to the run's last one

    # after the run: the same logs, kept, and a word on stderr that the run ended
    ended = re.escape("headwater logs: 'logged' ended ") + r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    kept = re.escape(f"; its logs are kept in {workdir}\n")
    instance = _logs("logged/task-1", "--tail", "10000")
    assert instance.returncode == 0, instance.stderr
    assert re.fullmatch(ended + kept, instance.stderr), instance.stderr
    assert instance.stdout.splitlines() == [
        f"==> logged/0: instance log task-1.log ({t1}) <==",
        *ticks,
    ]
    assert ticks[0] == "logged: ticks task 1 open"
    zero = _logs("logged/0", "--tail", "3")
    assert zero.returncode == 0, zero.stderr
    sections = _sections(zero.stdout)
    assert list(sections) == [
        f"==> logged/0: container log ({c0}) <==",
        f"==> logged/0: instance log task-1.log ({t1}) <==",
        f"==> logged/0: instance log task-3.log ({t3}) <==",
    ]
    assert list(sections.values()) == [_lines(c0)[-3:], ticks[-3:], _lines(t3)[-3:]]
    assert "container 0 stopping" in _lines(c0)[-1]
    assert _logs("logged", "--follow").returncode == 0  # an ended run: printed, then done

    # a name it does not know: what runs it knows, and what to do; no traceback
    unknown = _logs("nope")
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert re.fullmatch(
        re.escape("headwater: error: no local run named 'nope'; the local runs: logged (ended ")
        + r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
        + re.escape(
            "); or name a master: --master URL or HEADWATER_MASTER=URL for a master's topology\n"
        ),
        unknown.stderr,
    ), unknown.stderr
    assert sorted(p.name for p in state_dir().rglob("*")) == ["logged.json", "logs"]
