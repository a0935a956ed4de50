"""A package unpacked on a node: read-only, and checked against its zip before each load.

A node unpacks a topology's package once (``common/node/_node.py``) and starts
its containers from that folder for as long as it runs the topology. Whatever
can write there between two starts (a topology's own code, a careless
operator) could change what the next start runs, so the folder is sealed
(files 0444, folders 0555) and, before each start, compared with the zip it
came from, whose SHA-256 names the package (``drift``): a file changed,
missing or added (a planted ``__pycache__`` too: nodes run Python with
``PYTHONDONTWRITEBYTECODE``, so no byte code is ever written there) means the
folder is unpacked again from the zip (``fresh``), and a zip that no longer
hashes to its name is refused.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

from ._package import unpack_package, verify_package

MARK = ".verified"
"""The file a node leaves in a folder it unpacked and sealed (not part of the package)."""
NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}
"""The environment of the processes that load a node's packages."""
_FILE_MODE = 0o444
_DIR_MODE = 0o555


def drift(data: bytes, folder: Path) -> str | None:
    """How ``folder`` differs from the zip ``data`` (the first difference found), or None.

    ``data`` must already be trusted (checked against its digest)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        expected = {i.filename.rstrip("/"): i for i in zf.infolist()}
        for name, info in expected.items():
            path = folder / name
            if info.is_dir():
                if not path.is_dir() or path.is_symlink():
                    return f"{name}/ is missing"
                continue
            try:
                held = path.read_bytes() if not path.is_symlink() else None
            except OSError:
                held = None
            if held is None:
                return f"{name} is missing"
            if held != zf.read(info):
                return f"{name} was changed"
    # a zip names its folders only through its files' paths
    folders = {p.as_posix() for name in expected for p in PurePosixPath(name).parents}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            rel = (Path(root) / name).relative_to(folder).as_posix()
            if rel != MARK and rel not in expected and rel not in folders:
                return f"{rel} was added"
    return None


def fresh(data: bytes, digest: str, folder: Path) -> Path:
    """Unpack ``data`` (checked against ``digest``) into ``folder`` anew, sealed; the folder.

    What was there goes first, whatever it holds. Raises as ``unpack_package`` does."""
    verify_package(data, digest)
    remove(folder)
    unpack_package(data, digest, folder)
    (folder / MARK).touch()
    seal(folder)
    return folder


def seal(folder: Path) -> None:
    """Make ``folder`` and everything in it read-only (files 0444, folders 0555)."""
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(_FILE_MODE)
        for name in dirs:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(_DIR_MODE)
    folder.chmod(_DIR_MODE)


def remove(folder: Path) -> None:
    """Delete ``folder`` (sealed or not) and what it holds; nothing if it is not there."""

    def writable_again(func: object, path: str, _exc: object) -> None:
        parent = os.path.dirname(path)
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR | stat.S_IXUSR)
            shutil.rmtree(path, onerror=writable_again)
        else:
            os.unlink(path)

    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder, onerror=writable_again)
