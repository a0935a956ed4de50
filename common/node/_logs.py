"""A node's answer to the master's ``SendLogs`` order: the last lines of a container's logs.

A worker lays out each container it runs as ``WORKDIR/TOPOLOGY/container-N/``:
the container's own log (its stream manager and supervisor) is
``container.log`` there, and each instance process it starts writes
``task-T.log`` beside it (common/runtime/_container.py). Only those files are
read: the order names a topology (a checked safe name) and a container number,
never a path, and a file that is not a regular file inside that folder (a
symlink out of it, say) is skipped.

Everything is bounded: at most ``MAX_TAIL`` lines and ``MAX_FILE_BYTES`` of
each file, at most ``MAX_FILES`` files, at most ``MAX_REPLY_BYTES`` in all
(well under gRPC's 4 MiB message limit), read from the end of each file
without loading the rest. The reading blocks (file I/O): call it in a thread.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .._ids import name_problem
from ..wire.proto import runtime_pb2 as pb

MAX_TAIL = 10_000
MAX_FILE_BYTES = 256 << 10
MAX_FILES = 64
MAX_REPLY_BYTES = 2 << 20
CONTAINER_LOG = "container.log"
_TASK_LOG = re.compile(r"task-([0-9]{1,9})\.log")
_BLOCK = 64 << 10


def tail_file(path: Path, lines: int, max_bytes: int = MAX_FILE_BYTES) -> tuple[str, bool]:
    """The last ``lines`` lines of ``path`` (at most ``max_bytes`` of them), and whether the
    byte cap cut lines that were asked for. Reads backwards in blocks from the end.

    A trailing newline ends the last line; it does not start an empty one. Raises OSError
    when the file cannot be opened (or is not a regular file: it is opened without
    following a final symlink)."""
    lines = max(0, min(lines, MAX_TAIL))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        end = os.lseek(fd, 0, os.SEEK_END)
        data = b""
        pos = end
        # one more newline than lines: the one before the first line we keep
        while pos > 0 and data.count(b"\n", 0, len(data) - 1) < lines and len(data) <= max_bytes:
            step = min(_BLOCK, pos)
            pos -= step
            data = os.pread(fd, step, pos) + data
    finally:
        os.close(fd)
    if lines == 0 or not data:
        return "", False
    body = data[:-1] if data.endswith(b"\n") else data
    kept = body.split(b"\n")[-lines:]
    text = b"\n".join(kept) + (b"\n" if data.endswith(b"\n") else b"")
    truncated = False
    if len(text) > max_bytes:
        text = text[-max_bytes:]
        cut = text.find(b"\n")
        text = text[cut + 1 :] if 0 <= cut < len(text) - 1 else text
        truncated = True
    return text.decode("utf-8", errors="replace"), truncated


def container_home(workdir: Path, topology: str, container: int) -> Path:
    """Where a worker keeps ``topology``'s ``container`` (ValueError for a bad name or number)."""
    problem = name_problem(topology, "topology name")
    if problem is not None:
        raise ValueError(problem)
    if not 0 <= container < 100_000:
        raise ValueError(f"container {container} is not a container number")
    return workdir / topology / f"container-{container}"


def _log_files(home: Path) -> list[Path]:
    """``container.log`` then the instances' ``task-T.log`` in task order (at most MAX_FILES)."""
    tasks: list[tuple[int, Path]] = []
    try:
        entries = list(os.scandir(home))
    except OSError:
        return []
    found = {e.name for e in entries if e.is_file(follow_symlinks=False)}
    for name in found:
        match = _TASK_LOG.fullmatch(name)
        if match:
            tasks.append((int(match.group(1)), home / name))
    first = [home / CONTAINER_LOG] if CONTAINER_LOG in found else []
    return (first + [p for _, p in sorted(tasks)])[:MAX_FILES]


def read_logs(
    node_id: str, workdir: Path, order: pb.SendLogs, running: set[tuple[str, int]]
) -> pb.LogsReply:
    """The reply to ``order``: the logs of a container this node runs (``running``), or an
    error saying why not. Blocks on file I/O."""
    reply = pb.LogsReply(
        request_id=order.request_id,
        node_id=node_id,
        topology=order.topology,
        container=order.container,
    )
    try:
        home = container_home(workdir, order.topology, order.container)
    except ValueError as exc:
        reply.error = str(exc)
        return reply
    if (order.topology, order.container) not in running:
        reply.error = f"this node runs no container {order.container} of {order.topology!r}"
        return reply
    left = MAX_REPLY_BYTES
    for path in _log_files(home):
        if left <= 0:
            break
        try:
            text, truncated = tail_file(path, order.tail, min(MAX_FILE_BYTES, left))
        except OSError:
            continue  # gone meanwhile, or not a regular file: not served
        left -= len(text.encode())
        reply.files.append(
            pb.LogFile(name=path.name, path=str(path), text=text, truncated=truncated)
        )
    if not reply.files:
        reply.files.append(pb.LogFile(name=CONTAINER_LOG, path=str(home / CONTAINER_LOG)))
    return reply
