"""A small filesystem a test mounts (tmpfs, as root), fills and frees."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def small_disk(where: Path, size_mb: int) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(where)],
        check=True,
        capture_output=True,
        timeout=30,
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True, timeout=30)


def fill(disk: Path) -> Path:
    """Write a file until the filesystem has no block left; return it (delete it to free)."""
    filler = disk / "filler"
    chunk = b"\0" * (1 << 20)
    with open(filler, "ab", buffering=0) as f:
        for size in (1 << 20, 4096, 1):
            while True:
                try:
                    f.write(chunk[:size])
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    return filler


def free(filler: Path) -> None:
    os.unlink(filler)
