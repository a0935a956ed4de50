"""Topology packages: the code of a topology as one content-addressed, hash-checked bundle.

``headwater submit`` packs the topology file's folder (its Python files, so
that sibling imports work) into a deterministic zip: the same code gives the
same bytes and so the same SHA-256, which names the package. Every container
that runs the topology fetches it by that name and refuses it unless the
bytes hash to it, so a corrupted or tampered upload never runs.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

from ._exceptions import PackageMismatchError, TopologyLoadError

_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: same code, same bytes
MAX_PACKAGE_BYTES = 64 << 20


def build_package(topology_file: str | os.PathLike[str]) -> tuple[bytes, str]:
    """Zip the topology file and the Python files beside it; return (bytes, entry name)."""
    file = Path(topology_file).resolve()
    if not file.is_file():
        raise TopologyLoadError(f"no topology file at {str(topology_file)!r}: check the path")
    root = file.parent
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root)
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            info = zipfile.ZipInfo(rel.as_posix(), date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    data = buf.getvalue()
    if len(data) > MAX_PACKAGE_BYTES:
        raise TopologyLoadError(
            f"the package of {file.name} is {len(data) >> 20} MiB; keep data files out of the "
            "topology's folder (the limit is 64 MiB)"
        )
    return data, file.name


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
    """Verify, then extract into ``into`` (a fresh folder); return that folder."""
    verify_package(data, expected)
    target = Path(into)
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for name in zf.namelist():
            dest = (target / name).resolve()
            if not dest.is_relative_to(target.resolve()):
                raise PackageMismatchError(f"refusing topology package: entry {name!r} escapes")
        zf.extractall(target)
    return target


class PackageStore:
    """Packages on disk, named by their hash; reading one checks it again."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, digest: str) -> Path:
        algo, _, hexdigest = digest.partition(":")
        if (
            algo != "sha256"
            or len(hexdigest) != 64
            or not all(c in "0123456789abcdef" for c in hexdigest)
        ):
            raise PackageMismatchError(f"{digest!r} is not a package name (sha256:<64 hex>)")
        return self.root / hexdigest

    def put(self, data: bytes) -> str:
        digest = package_hash(data)
        path = self._path(digest)
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return digest

    def get(self, digest: str) -> bytes:
        path = self._path(digest)
        if not path.exists():
            raise KeyError(digest)
        data = path.read_bytes()
        verify_package(data, digest)
        return data
