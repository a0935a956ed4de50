"""Fuzz the package unpacker: ``check_package`` and ``unpack_package`` on untrusted zips.

Contract: ``check_package`` returns or raises ``PackageRefusedError``; ``unpack_package``
(given the package's own hash, so the hash check passes) returns or raises
``PackageRefusedError`` / ``PackageMismatchError``; whatever happens, nothing is written
outside the target folder and what is inside stays within ``MAX_PACKAGE_FILES`` and
``MAX_UNPACKED_BYTES``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import warnings
import zipfile
from pathlib import Path

from _atheris import DataProvider, instrument, main, provider

with instrument("headwater.common._package"):
    from headwater.common._exceptions import PackageMismatchError, PackageRefusedError
    from headwater.common._package import (
        MAX_PACKAGE_FILES,
        MAX_UNPACKED_BYTES,
        check_package,
        package_hash,
        unpack_package,
    )

# pieces of entry names: the ones that climb out, stand for a folder, or confuse a path
_PARTS = ["a", "b.py", "..", ".", "", "/", "x/", "/etc", "a/b", "\\", "\0", "é", "a/../..", "~"]
_METHODS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # zipfile's, when building
_ROOT = Path(tempfile.mkdtemp(prefix="headwater-fuzz-package-"))


def _zip(fdp: DataProvider) -> bytes:
    """A zip built from the input: odd names, any method, flags and sizes, then a byte
    of it changed (its directory, a header or compressed data)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for _ in range(fdp.ConsumeIntInRange(0, 6)):
            n = fdp.ConsumeIntInRange(1, 4)
            name = "".join(_PARTS[fdp.ConsumeIntInRange(0, len(_PARTS) - 1)] for _ in range(n))
            info = zipfile.ZipInfo(name or "a")
            info.compress_type = _METHODS[fdp.ConsumeIntInRange(0, len(_METHODS) - 1)]
            if fdp.ConsumeBool():
                info.external_attr = fdp.ConsumeIntInRange(0, 2**32 - 1)
            zf.writestr(info, fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 300)))
            if fdp.ConsumeBool():
                info.flag_bits |= 1  # "encrypted", written into the central directory
    data = bytearray(buf.getvalue())
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        if data:
            data[fdp.ConsumeIntInRange(0, len(data) - 1)] = fdp.ConsumeIntInRange(0, 255)
    return bytes(data)


def _inside(target: Path) -> None:
    """Only ``target`` (and the canary) in the root; within bounds inside it."""
    assert sorted(os.listdir(_ROOT)) == ["canary", "pkg"], os.listdir(_ROOT)
    assert (_ROOT / "canary").read_bytes() == b"untouched"
    files = size = 0
    for folder, dirs, names in os.walk(target):
        for name in dirs + names:
            path = Path(folder, name)
            assert not path.is_symlink(), f"a symlink was written: {path}"
            files += 1
            if path.is_file():
                size += path.stat().st_size
    assert files <= MAX_PACKAGE_FILES and size <= MAX_UNPACKED_BYTES


def _unpack(data: bytes) -> None:
    with contextlib.suppress(PackageRefusedError):
        check_package(data)
    shutil.rmtree(_ROOT)
    _ROOT.mkdir()
    (_ROOT / "canary").write_bytes(b"untouched")
    target = _ROOT / "pkg"
    with contextlib.suppress(PackageRefusedError, PackageMismatchError):
        unpack_package(data, package_hash(data), target)
    if not target.exists():
        target.mkdir()
    _inside(target)


def one_input(data: bytes) -> None:
    if data[:1] == b"\x00":
        _unpack(_zip(provider(data[1:])))
    else:
        _unpack(data[1:])


def seeds() -> list[bytes]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("main.py", "from helpers import X\n")
        zf.writestr("lib/", "")
        zf.writestr("lib/helpers.py", "X = 1\n")
    stored = io.BytesIO()
    with zipfile.ZipFile(stored, "w") as zf:
        zf.writestr("t.py", "print(1)\n")
    return [
        b"\x01" + buf.getvalue(),
        b"\x01" + stored.getvalue(),
        b"\x00" + bytes(range(64)),
        b"\x00" + bytes(range(255, 128, -1)),
    ]


if __name__ == "__main__":
    try:
        main(one_input, seeds)
    finally:
        shutil.rmtree(_ROOT, ignore_errors=True)
