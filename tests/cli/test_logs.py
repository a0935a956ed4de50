"""`headwater logs`: which logs it reads (a local run's, or a master's) and what it says when
nothing matches; the local runs' logs themselves are tests/integration/test_cli_logs.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import _cli
from headwater.cloud.local import state_dir
from headwater.cloud.local._logs import end_run, logs_dir, record_run, recorded_runs
from headwater.common.plan import load_topology, pack_round_robin

LOGGED = Path(__file__).parents[1] / "integration" / "topologies" / "logged.py"
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing answers there


@pytest.fixture(autouse=True)
def no_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_MASTER", raising=False)


def _ended_run(workdir: Path) -> None:
    """A run of 'logged' (tasks 1 and 3 in container 0, task 2 in 1) that ended, logs kept."""
    workdir.mkdir()
    for name in ("tmaster", "container-0", "container-1", "task-1", "task-2", "task-3"):
        (workdir / f"{name}.log").write_text(f"{name} line 1\n{name} line 2\n")
    plan = pack_round_robin(load_topology(LOGGED), 2)
    end_run(record_run(state_dir(), "logged", workdir, plan), workdir, logs_kept=True)


def _logs(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = _cli.main(["logs", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_no_local_run_says_how_to_start_one_or_name_a_master(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _logs(capsys, "wc") == (
        2,
        "",
        "headwater: error: no local run named 'wc': no run of `headwater run` on this machine "
        "has logs kept; start one with `headwater run FILE`, or name a master: --master URL or "
        "HEADWATER_MASTER=URL for a master's topology\n",
    )


def test_an_ended_run_and_what_it_does_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ended_run(tmp_path / "run")
    (run,) = recorded_runs(state_dir()).values()
    assert (run.topology, run.tasks, run.running) == (
        "logged",
        {0: {1: "ticks", 3: "echo"}, 1: {2: "echo"}},
        False,
    )
    code, out, err = _logs(capsys, "logged/tmaster", "--tail", "1")
    assert (code, out) == (
        0,
        f"==> logged: topology master log ({tmp_path / 'run' / 'tmaster.log'}) <==\n"
        "tmaster line 2\n",
    )
    assert err.startswith("headwater logs: 'logged' ended ")
    for target, said in (
        ("logged/2", "'logged' has no container 2: its containers are 0, 1"),
        (
            "logged/task-4",
            "'logged' has no task 4: its instances are task-1 (ticks), task-2 (echo), "
            "task-3 (echo)",
        ),
        (
            "logged/x",
            "'logged/x': name a container (logged/0), an instance (logged/task-1) or the "
            "topology master (logged/tmaster) after the topology's name",
        ),
    ):
        assert _logs(capsys, target) == (2, "", f"headwater: error: {said}\n")


def test_a_run_whose_work_directory_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ended_run(tmp_path / "run")
    for p in (tmp_path / "run").iterdir():
        p.unlink()
    (tmp_path / "run").rmdir()
    assert _logs(capsys, "logged") == (
        2,
        "",
        f"headwater: error: the logs of 'logged' were in {tmp_path / 'run'}, which is gone; "
        "run it again with `headwater run FILE` to make new ones\n",
    )


def test_a_master_is_asked_for_what_is_not_a_local_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With HEADWATER_MASTER, a name that is no local run's goes to the master; a local
    run's name too, and is read here when the master does not have it (or does not answer;
    tests/integration/test_worker_logs.py has a master that has it); --local reads the local
    run without asking; --master URL always asks the master."""
    _ended_run(tmp_path / "run")
    monkeypatch.setenv("HEADWATER_MASTER", UNREACHABLE)
    code, out, err = _logs(capsys, "wordcount")
    assert (code, out) == (2, "")
    assert err.startswith(f"headwater: error: cannot reach the master at {UNREACHABLE}/api/v1/")
    task = tmp_path / "run" / "task-2.log"
    code, out, err = _logs(capsys, "logged/task-2")
    assert (code, out) == (
        0,
        f"==> logged/1: instance log task-2.log ({task}) <==\ntask-2 line 1\ntask-2 line 2\n",
    )
    # the master might have 'logged' too, but does not answer: the local run's, said so
    first, ended = err.splitlines()
    assert first.startswith(
        f"headwater logs: the master did not answer (cannot reach the master at {UNREACHABLE}/"
    )
    assert first.endswith("; logs of the local run of that name (`headwater run`)")
    assert ended.startswith("headwater logs: 'logged' ended ")
    code, out, err = _logs(capsys, "logged/task-2", "--local")  # asks no master
    assert (code, out) == (
        0,
        f"==> logged/1: instance log task-2.log ({task}) <==\ntask-2 line 1\ntask-2 line 2\n",
    )
    assert err.startswith("headwater logs: 'logged' ended ")
    assert _logs(capsys, "logged", "--local", "--master", UNREACHABLE) == (
        2,
        "",
        "headwater: error: --local reads a local run's logs, --master URL a master's: give one\n",
    )
    code, out, err = _logs(capsys, "logged/0", "--master", UNREACHABLE)
    assert (code, out) == (2, "")
    assert err.startswith(f"headwater: error: cannot reach the master at {UNREACHABLE}/api/v1/")
    assert _logs(capsys, "wordcount", "--follow") == (
        2,
        "",
        "headwater: error: --follow reads a local run's logs (`headwater run`); a master's "
        "are read with --tail N\n",
    )


def test_a_run_ending_leaves_a_later_runs_record_alone(tmp_path: Path) -> None:
    """Two runs of one name: the first's stop neither ends nor removes the second's record."""
    plan = pack_round_robin(load_topology(LOGGED), 1)
    first = record_run(state_dir(), "logged", tmp_path / "a", plan)
    second = record_run(state_dir(), "logged", tmp_path / "b", plan)
    assert first == second
    end_run(first, tmp_path / "a", logs_kept=False)
    end_run(first, tmp_path / "a", logs_kept=True)
    (run,) = recorded_runs(state_dir()).values()
    assert (run.workdir, run.ended, run.running, run.tasks) == (
        tmp_path / "b",
        None,
        True,
        {0: {1: "ticks", 2: "echo", 3: "echo"}},
    )
    end_run(second, tmp_path / "b", logs_kept=False)
    assert recorded_runs(state_dir()) == {}


@pytest.mark.parametrize("name", ["../../evil", "a/b", "..", "with space"])
def test_a_run_records_its_logs_inside_the_state_dir_whatever_its_name(
    name: str, tmp_path: Path
) -> None:
    workdir = tmp_path / "run"
    workdir.mkdir()
    plan = pack_round_robin(load_topology(LOGGED), 1)
    path = record_run(state_dir(), name, workdir, plan)
    assert path.parent == logs_dir(state_dir())
    assert {n: r.workdir for n, r in recorded_runs(state_dir()).items()} == {name: workdir}
    end_run(path, workdir, logs_kept=False)
    assert recorded_runs(state_dir()) == {}


def test_the_last_lines_of_a_log_leave_out_a_line_longer_than_the_cap(tmp_path: Path) -> None:
    from headwater._logs_cli import MAX_TAIL_BYTES, _tail

    # a task printing without newlines (a progress bar's \r) makes such a line: read back
    # whole, a log of hundreds of MB took minutes (each 64 KiB step copied all read so far)
    log = tmp_path / "task-1.log"
    log.write_bytes(b"first\n" + b"x" * (MAX_TAIL_BYTES + 1) + b"\nlast 1\nlast 2\n")
    assert _tail(log, 5) == (b"last 1\nlast 2\n", log.stat().st_size)
    assert _tail(log, 1) == (b"last 2\n", log.stat().st_size)
