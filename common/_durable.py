"""Making a folder's entries durable: after a file is created or renamed into a folder, the
folder itself is fsynced, or a crash may lose the entry though the file's bytes were synced."""

from __future__ import annotations

import errno
import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make the folder's entries (a create, a rename) durable. A file system that cannot
    fsync a folder (EINVAL, ENOTSUP) is let be; any other error (EIO) is raised: the write is
    not known to be durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)
