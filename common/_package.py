"""Topology packages: the code of a topology as one content-addressed, hash-checked bundle.

``headwater submit`` packs the topology file's folder (its Python files, so
that sibling imports work) into a deterministic zip: the same code gives the
same bytes and so the same SHA-256, which names the package. Every container
that runs the topology fetches it by that name and refuses it unless the
bytes hash to it, so a corrupted or tampered upload never runs.

A package is untrusted input: before anything is extracted (on the master at
upload, on a node before unpacking) ``check_package`` bounds it (compressed
size, file count, uncompressed size, so a zip bomb is refused unread) and
refuses entries that would land outside its folder, that name one path twice
(or as both a file and a folder), that are encrypted, or that are compressed
otherwise than stored or deflated; ``entry_problem`` keeps a
topology file's name inside the package; ``digest_problem`` keeps a package's
name to ``sha256:<64 hex>`` so that it can name a folder.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ._exceptions import PackageMismatchError, PackageRefusedError, TopologyLoadError
from .statemgr._base import StateError

if TYPE_CHECKING:
    from .statemgr._blobs import Blobs

log = logging.getLogger("headwater.master")

_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: same code, same bytes
MAX_PACKAGE_BYTES = 64 << 20
"""The largest package (the zip's own bytes)."""
MAX_PACKAGE_FILES = 10_000
"""The most files (and folders) a package may hold."""
MAX_UNPACKED_BYTES = 256 << 20
"""The most bytes a package's files may hold once unpacked."""
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # what build_package writes, and zip's
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def digest_problem(digest: str) -> str | None:
    """Why ``digest`` is not a package name (``sha256:<64 hex>``), or None if it is one."""
    if _DIGEST.fullmatch(digest):
        return None
    return f"{digest[:80]!r} is not a package name (sha256:<64 hex>)"


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` is not a file inside a package (relative, no '..', a path every file
    system takes), or None if it is one."""
    path = PurePosixPath(entry)
    try:  # a zip names its files in UTF-8; a file system takes 255 bytes a name
        raw = entry.encode("utf-8")
    except UnicodeEncodeError:
        raw = b""
    if (
        not raw
        or len(raw) > 1024
        or any(len(part.encode("utf-8")) > 255 for part in path.parts)
        or path.is_absolute()
        or "\\" in entry
        or "\0" in entry
        or any(part == ".." for part in path.parts)
        or entry.endswith("/")
    ):
        return (
            f"{entry[:80]!r} is not a file inside the package: name it relative to the "
            "topology file's folder, without '..', in UTF-8, each name at most 255 bytes "
            "(e.g. wordcount.py)"
        )
    return None


def check_package(data: bytes) -> None:
    """Raise PackageRefusedError unless ``data`` is a zip within every bound whose entries
    stay inside the folder it is unpacked into; reads only the zip's directory."""
    if not data:
        raise PackageRefusedError("the package is empty: send the topology's zip as the body")
    if len(data) > MAX_PACKAGE_BYTES:
        raise PackageRefusedError(
            f"the package is {len(data)} bytes; the limit is {MAX_PACKAGE_BYTES} "
            "(keep data files out of the topology's folder)",
            too_large=True,
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        ValueError,
        OSError,
        EOFError,
        NotImplementedError,  # a directory entry that claims a zip version beyond Python's
    ) as exc:
        raise PackageRefusedError(f"the package is not a readable zip: {exc}") from None
    if len(infos) > MAX_PACKAGE_FILES:
        raise PackageRefusedError(
            f"the package holds {len(infos)} files; the limit is {MAX_PACKAGE_FILES}",
            too_large=True,
        )
    unpacked = sum(info.file_size for info in infos)
    if unpacked > MAX_UNPACKED_BYTES:
        raise PackageRefusedError(
            f"the package unpacks to {unpacked} bytes; the limit is {MAX_UNPACKED_BYTES}",
            too_large=True,
        )
    files: set[tuple[str, ...]] = set()
    folders: set[tuple[str, ...]] = set()
    for info in infos:
        # (not ZipInfo.is_dir: it fails on an empty name)
        is_dir = info.filename.endswith("/")
        name = info.filename.rstrip("/") if is_dir else info.filename
        if entry_problem(name) is not None:
            raise PackageRefusedError(
                f"the package's entry {info.filename[:80]!r} would land outside its folder"
            )
        if info.flag_bits & 0x1:
            raise PackageRefusedError(
                f"the package's entry {info.filename[:80]!r} is encrypted: zip it without a "
                "password (headwater submit does)"
            )
        if info.compress_type not in _METHODS:
            raise PackageRefusedError(
                f"the package's entry {info.filename[:80]!r} is compressed with method "
                f"{info.compress_type}: only stored or deflated entries are taken "
                "(headwater submit deflates)"
            )
        # the path zipfile writes: '.' and empty parts dropped ('..' was refused above)
        parts = tuple(p for p in name.split("/") if p not in ("", "."))
        if not parts or parts in files or (not is_dir and parts in folders):
            raise PackageRefusedError(
                f"the package's entry {info.filename[:80]!r} names its folder, or a file "
                "named twice or also as a folder: every entry needs a path of its own"
            )
        (folders if is_dir else files).add(parts)
        folders.update(parts[:i] for i in range(1, len(parts)))
    if files & folders:
        clash = "/".join(min(files & folders))
        raise PackageRefusedError(
            f"the package names {clash[:80]!r} both as a file and as a folder"
        )


def build_package(topology_file: str | os.PathLike[str]) -> tuple[bytes, str]:
    """Zip the topology file and the Python files beside it; return (bytes, entry name)."""
    file = Path(topology_file).resolve()
    if not file.is_file():
        raise TopologyLoadError(f"no topology file at {str(topology_file)!r}: check the path")
    root = file.parent
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        files[rel.as_posix()] = path.read_bytes()
    data = zip_package(files)
    if len(data) > MAX_PACKAGE_BYTES:
        raise TopologyLoadError(
            f"the package of {file.name} is {len(data) >> 20} MiB; keep data files out of the "
            "topology's folder (the limit is 64 MiB)"
        )
    return data, file.name


def zip_package(files: Mapping[str, bytes]) -> bytes:
    """``files`` (name -> bytes) as a package: deterministic, sorted by name, with fixed
    timestamps and modes, so that the same files give the same bytes and hash."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, files[name], zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def package_files(data: bytes) -> dict[str, bytes]:
    """A checked package's files (name -> bytes), folders left out."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist() if not i.filename.endswith("/")}


def package_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def verify_package(data: bytes, expected: str) -> None:
    """Raise PackageMismatchError unless ``data`` hashes to ``expected``."""
    actual = package_hash(data)
    if actual != expected:
        raise PackageMismatchError(
            f"refusing topology package: its content hashes to {actual[:19]}… but "
            f"{expected[:19]}… was expected; the package was corrupted or altered in "
            "transit or storage; submit the topology again"
        )


def unpack_package(data: bytes, expected: str, into: str | os.PathLike[str]) -> Path:
    """Verify and check, then extract into ``into`` (a fresh folder); return that folder.

    Raises PackageMismatchError for a hash mismatch, PackageRefusedError for a package out
    of bounds, or one whose bytes do not unpack (nothing is written for either of those
    found before extraction)."""
    problem = digest_problem(expected)
    if problem is not None:
        raise PackageMismatchError(f"refusing topology package: {problem}")
    verify_package(data, expected)
    check_package(data)
    target = Path(into)
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for name in zf.namelist():
            dest = (target / name).resolve()
            if not dest.is_relative_to(target.resolve()):
                raise PackageMismatchError(f"refusing topology package: entry {name!r} escapes")
        try:
            zf.extractall(target)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError) as exc:
            # ValueError: an offset in the directory that points before the zip's start
            raise PackageRefusedError(f"the package does not unpack: {exc}") from None
    return target


class PackageStore:
    """Packages on disk, named by their hash; reading one checks it again.

    With ``shared`` (the blob store the masters share, ``--blob-store``): a package kept
    here is in it too before ``keep`` returns, one missing here is fetched from it
    (checked, then kept here: this folder is a cache), and ``delete`` drops it there too.
    A call that may reach the shared store blocks on the network (``keep``, ``fetch``,
    ``delete``; ``get`` on a miss only): a caller on an event loop runs it on a thread.
    Threadsafe (each file is written beside its place, then renamed)."""

    def __init__(self, root: str | os.PathLike[str], shared: Blobs | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.shared = shared

    def _path(self, digest: str) -> Path:
        problem = digest_problem(digest)
        if problem is not None:
            raise PackageMismatchError(problem)
        return self.root / digest.partition(":")[2]

    def has(self, digest: str) -> bool:
        """Whether the package is here (on this disk; the shared store is not asked)."""
        return self._path(digest).exists()

    def delete(self, digest: str) -> None:
        """Drop a package nothing uses any more, here and in the shared store."""
        self.delete_here(digest)
        self.delete_shared(digest)

    def delete_here(self, digest: str) -> None:
        """Drop a package from this disk (the shared store keeps it)."""
        self._path(digest).unlink(missing_ok=True)

    def delete_shared(self, digest: str) -> None:
        """Drop a package from the shared store, if any (blocks on the network). One it cannot
        drop now stays there, said in the log: never read, and a package of the same bytes
        kept later reuses it."""
        if self.shared is not None:
            try:
                self.shared.delete(self._path(digest).name)
            except StateError as exc:
                log.warning("package %s stays in the blob store: %s", digest[:19], exc)

    def keep(self, data: bytes) -> tuple[str, bool]:
        """Keep ``data`` here, and first in the shared store; its name and whether it is new
        (neither here nor in the shared store before). A shared store that fails raises its
        ``StateError`` (``BlobUnavailable``, ``BlobRefused``) and nothing new is kept."""
        digest = package_hash(data)
        path = self._path(digest)
        here = path.exists()
        shared_had = False  # (no shared store: new if not here)
        if self.shared is not None:
            name = digest.partition(":")[2]
            shared_had = self.shared.has(name)
            if not shared_had:
                self.shared.put(name, data)
        if not here:
            try:
                self._write(path, data)
            except BaseException:
                if not shared_had:  # nothing new is half-kept
                    self.delete(digest)
                raise
        return digest, not here and not shared_had

    def put(self, data: bytes) -> str:
        """Keep ``data`` (``keep``); its name."""
        return self.keep(data)[0]

    def get(self, digest: str) -> bytes:
        """The package's bytes, checked (PackageMismatchError); fetched from the shared store
        if it is not here (``fetch``); KeyError when neither has it."""
        path = self._path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return self.fetch(digest)
        verify_package(data, digest)
        return data

    def fetch(self, digest: str) -> bytes:
        """The package from the shared store, checked against its name, then kept here (a
        package already here is read from here); KeyError when neither has it, the shared
        store's ``StateError`` when it fails, PackageMismatchError when its bytes do not hash
        to the name (nothing is kept then)."""
        path = self._path(digest)
        if path.exists():
            return self.get(digest)
        data = None if self.shared is None else self.shared.get(digest.partition(":")[2])
        if data is None:
            raise KeyError(digest)
        assert self.shared is not None
        try:
            verify_package(data, digest)
        except PackageMismatchError as exc:
            raise PackageMismatchError(f"{self.shared.describe()}: {exc}") from None
        self._write(path, data)
        return data

    def _write(self, path: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:16]}.", suffix=".tmp", dir=self.root)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
