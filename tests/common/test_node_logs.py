"""A node's answer to ``SendLogs`` (common/node/_logs.py): only its own containers' log files,
their last lines, within the byte and file bounds."""

from __future__ import annotations

import os
from pathlib import Path

from headwater.common.node import _logs
from headwater.common.node._logs import MAX_TAIL, read_logs, tail_file
from headwater.common.wire.proto import runtime_pb2 as pb


def _lines(n: int, width: int = 0) -> str:
    return "".join(f"line {i}{'x' * width}\n" for i in range(n))


def test_tail_file_gives_the_last_lines_exactly(tmp_path: Path) -> None:
    f = tmp_path / "a.log"
    f.write_text(_lines(100_000))  # many blocks: read backwards, not whole
    assert tail_file(f, 3) == ("line 99997\nline 99998\nline 99999\n", False)
    f.write_text("one\ntwo")  # no trailing newline
    assert tail_file(f, 1) == ("two", False)
    assert tail_file(f, 5) == ("one\ntwo", False)
    f.write_text("")
    assert tail_file(f, 5) == ("", False)


def test_tail_file_caps_lines_and_bytes_at_a_line_start(tmp_path: Path) -> None:
    f = tmp_path / "a.log"
    f.write_text(_lines(MAX_TAIL + 50))
    text, cut = tail_file(f, MAX_TAIL * 10)
    assert text.count("\n") == MAX_TAIL and not cut
    f.write_text(_lines(200, width=100))  # ~20 KB
    text, cut = tail_file(f, 200, max_bytes=1000)
    assert cut and len(text.encode()) <= 1000
    assert text.startswith("line ") and text.endswith("line 199" + "x" * 100 + "\n")


def test_tail_file_refuses_a_symlink_and_a_fifo(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("key\n")
    (tmp_path / "link.log").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo.log")
    for name in ("link.log", "fifo.log"):
        try:
            tail_file(tmp_path / name, 5)
        except OSError:
            continue
        raise AssertionError(f"{name} was read")


def _home(workdir: Path, topology: str = "wc", container: int = 0) -> Path:
    home = workdir / topology / f"container-{container}"
    home.mkdir(parents=True)
    return home


def _order(topology: str = "wc", container: int = 0, tail: int = 2) -> pb.SendLogs:
    return pb.SendLogs(request_id="r1", topology=topology, container=container, tail=tail)


def test_read_logs_serves_the_container_log_then_its_instances_in_task_order(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    (home / "container.log").write_text("a\nb\nc\n")
    (home / "task-10.log").write_text("ten\n")
    (home / "task-2.log").write_text("two-a\ntwo-b\ntwo-c\n")
    (home / "notes.txt").write_text("not a log\n")
    (home / "task-3.log").symlink_to(tmp_path / "elsewhere")
    reply = read_logs("w1", tmp_path, _order(), {("wc", 0)})
    assert reply.error == "" and (reply.request_id, reply.node_id) == ("r1", "w1")
    assert [(f.name, f.text) for f in reply.files] == [
        ("container.log", "b\nc\n"),
        ("task-2.log", "two-b\ntwo-c\n"),
        ("task-10.log", "ten\n"),
    ]
    assert reply.files[0].path == str(home / "container.log")


def test_read_logs_answers_only_for_its_own_containers_and_safe_names(tmp_path: Path) -> None:
    _home(tmp_path, "other")
    (tmp_path / "other" / "container-0" / "container.log").write_text("theirs\n")
    reply = read_logs("w1", tmp_path, _order("other"), {("wc", 0)})
    assert reply.error == "this node runs no container 0 of 'other'" and not reply.files
    for bad in ("../other", "/etc", "a/b", ""):
        reply = read_logs("w1", tmp_path, _order(bad), {(bad, 0)})
        assert reply.error and not reply.files, bad
    reply = read_logs("w1", tmp_path, _order(container=-1), {("wc", -1)})
    assert "not a container number" in reply.error


def test_read_logs_bounds_the_files_and_the_reply(tmp_path: Path, monkeypatch) -> None:
    home = _home(tmp_path)
    for t in range(_logs.MAX_FILES + 5):
        (home / f"task-{t}.log").write_text("x" * 100 + "\n")
    reply = read_logs("w1", tmp_path, _order(tail=1), {("wc", 0)})
    assert len(reply.files) == _logs.MAX_FILES
    monkeypatch.setattr(_logs, "MAX_REPLY_BYTES", 250)
    reply = read_logs("w1", tmp_path, _order(tail=1), {("wc", 0)})
    assert sum(len(f.text) for f in reply.files) <= 250
    assert [f.name for f in reply.files] == ["task-0.log", "task-1.log", "task-2.log"]
