"""The state manager in local files: one machine, the demo, edge-only setups, the agents.

A record is the file at its path under the root (``STATE/tokens.json``,
``STATE/topologies/iot/revisions.json``): exactly the layout the master has always
kept, so a state folder written before the state manager existed reads as it was.
A write goes to a temporary file beside the record (readable by its owner only),
is synced, renamed over the record, and the folder is synced: a crash leaves the old
value or the new one. Folders below the root are made as needed (owner only); the
root itself must exist, so a store pointed at a folder that is gone fails to save
instead of making it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Hashable
from pathlib import Path

from .._durable import fsync_dir
from ._base import (
    MAX_RECORD_BYTES,
    Record,
    StateManager,
    StateTooLarge,
    StateUnavailable,
    segments,
)


class LocalStateManager:
    """Records as files under ``root``. Threadsafe (every write is its own temporary
    file); blocking, as file I/O is."""

    def __init__(self, root: str | os.PathLike[str], *, create: bool = False) -> None:
        """``create``: make ``root`` (owner only) if it is not there."""
        self.root = Path(root)
        if create:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _file(self, path: str) -> Path:
        return self.root.joinpath(*segments(path))

    def get(self, path: str) -> bytes | None:
        file = self._file(path)
        try:
            return file.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _unavailable("read", file, exc) from exc

    def put(self, path: str, data: bytes) -> None:
        file = self._file(path)
        if not path:
            raise StateUnavailable(f"cannot save {file}: the root holds no value", "no value")
        if len(data) > MAX_RECORD_BYTES:
            raise StateTooLarge(
                f"cannot save {file}: {len(data)} bytes is over the {MAX_RECORD_BYTES}-byte "
                "bound of a state record",
                "too large",
            )
        try:
            if self.root.is_dir():  # the folders below the root; the root is the caller's
                file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:  # mkstemp's file is its owner's only (0600)
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, file)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            fsync_dir(file.parent)
        except OSError as exc:
            raise _unavailable("save", file, exc) from exc

    def delete(self, path: str) -> None:
        file = self._file(path)
        if not path:
            raise StateUnavailable(f"will not delete the whole state in {file}", "refused")
        try:
            if file.is_dir() and not file.is_symlink():
                shutil.rmtree(file)
            else:
                file.unlink(missing_ok=True)
        except OSError as exc:
            raise _unavailable("delete", file, exc) from exc

    def children(self, path: str) -> list[str]:
        folder = self._file(path)
        try:
            names = [e.name for e in os.scandir(folder)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise _unavailable("list", folder, exc) from exc
        # a write's temporary file (".NAME.XXXX.tmp", or an older master's "NAME.tmp")
        return sorted(n for n in names if not n.startswith(".") and not n.endswith(".tmp"))

    def version(self, path: str) -> Hashable | None:
        """The file's inode (every save replaces the file), modification time and size: the
        time alone misses a second save within the file system's clock tick."""
        try:
            st = self._file(path).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def describe(self, path: str) -> str:
        return str(self._file(path))

    def close(self) -> None:
        """Nothing to let go."""

    def __repr__(self) -> str:
        return f"LocalStateManager({str(self.root)!r})"


def _unavailable(what: str, file: Path, exc: OSError) -> StateUnavailable:
    reason = exc.strerror or str(exc)
    return StateUnavailable(f"cannot {what} {file}: {reason}", reason)


def as_state(where: str | os.PathLike[str] | StateManager) -> StateManager:
    """A state manager: ``where`` itself, or local files in the folder ``where`` (which
    must exist; what is below it is made as needed)."""
    if isinstance(where, str | os.PathLike):
        return LocalStateManager(Path(where))
    return where


def as_record(where: str | os.PathLike[str] | Record) -> Record:
    """A record: ``where`` itself, or the file ``where`` (in a folder that must exist), so
    that a store handed a file's path keeps working as it did."""
    if isinstance(where, Record):
        return where
    path = Path(where)
    return Record(as_state(path.parent), path.name)
