"""Part files of the transactional sinks: sealed hidden, published by atomic rename.

A checkpoint's output for one task is a *part*: first written to a hidden
``.part-<checkpoint:08d>-<task>.<ext>.pending`` (sealed at the barrier, made
durable), then renamed to ``part-<checkpoint:08d>-<task>.<ext>`` when the
checkpoint completes everywhere. A rename is atomic, so a reader listing
``part-*`` never sees partial output; a rollback deletes the parts of the
undone checkpoints, so it never sees duplicates. ``TransactionalFileSink``
keeps its parts in one folder, ``LandingSink`` in many partition folders.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import IO

from .._durable import fsync_dir

PENDING = re.compile(r"^\.part-(\d+)-(\d+)\.(\w+)\.pending$")
FINAL = re.compile(r"^part-(\d+)-(\d+)\.(\w+)$")
TMP = re.compile(r"^\.part-(\d+)-(\d+)\.(\w+)\.tmp$")


def final_name(checkpoint: int, task: int, ext: str) -> str:
    return f"part-{checkpoint:08d}-{task}.{ext}"


def pending_name(checkpoint: int, task: int, ext: str) -> str:
    return f".{final_name(checkpoint, task, ext)}.pending"


def write_durably(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """``write`` into ``path.tmp``, fsync it, then rename it to ``path`` (all or nothing)."""
    tmp = path.with_name(path.name.removesuffix(".pending") + ".tmp")
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def parts(directory: Path, pattern: re.Pattern[str]) -> list[tuple[Path, int, int]]:
    """``(path, checkpoint, task)`` of the files in ``directory`` matching ``pattern``."""
    out = []
    with contextlib.suppress(FileNotFoundError):
        for path in directory.iterdir():
            m = pattern.match(path.name)
            if m:
                out.append((path, int(m.group(1)), int(m.group(2))))
    return out


def publish(directory: Path, task: int, up_to: int) -> bool:
    """Rename ``task``'s pending parts of checkpoints ``<= up_to`` to their final names."""
    moved = False
    for path, ckpt, t in parts(directory, PENDING):
        if t == task and ckpt <= up_to:
            path.replace(directory / path.name[1 : -len(".pending")])
            moved = True
    if moved:
        fsync_dir(directory)
    return moved


def roll_back(directory: Path, task: int, checkpoint: int) -> None:
    """Delete ``task``'s parts (pending, half-written, and published after a fallback past
    a corrupt checkpoint: they will be replayed) of checkpoints after ``checkpoint``."""
    for pattern in (PENDING, TMP, FINAL):
        for path, ckpt, t in parts(directory, pattern):
            if t == task and (ckpt > checkpoint or pattern is TMP):
                path.unlink(missing_ok=True)
