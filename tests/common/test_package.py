"""Topology packages are deterministic, content-addressed and hash-checked."""

from __future__ import annotations

import base64
import io
import struct
import zipfile
from pathlib import Path

import pytest

from headwater import HeadwaterError
from headwater.common._exceptions import PackageMismatchError, PackageRefusedError
from headwater.common._package import (
    MAX_PACKAGE_BYTES,
    MAX_PACKAGE_FILES,
    MAX_UNPACKED_BYTES,
    PackageStore,
    build_package,
    check_package,
    digest_problem,
    entry_problem,
    package_hash,
    unpack_package,
    verify_package,
)


def _topology_dir(tmp_path: Path) -> Path:
    d = tmp_path / "topo"
    (d / "lib").mkdir(parents=True)
    (d / "main.py").write_text("from helpers import X\n")
    (d / "helpers.py").write_text("X = 1\n")
    (d / "lib" / "more.py").write_text("Y = 2\n")
    (d / "data.csv").write_text("not python\n")
    return d


def test_same_code_same_hash(tmp_path: Path) -> None:
    d = _topology_dir(tmp_path)
    first, entry = build_package(d / "main.py")
    (d / "helpers.py").touch()  # a new mtime changes nothing
    second, _ = build_package(d / "main.py")
    assert entry == "main.py"
    assert first == second
    (d / "helpers.py").write_text("X = 2\n")
    assert package_hash(build_package(d / "main.py")[0]) != package_hash(first)


def test_unpack_checks_the_hash(tmp_path: Path) -> None:
    data, _ = build_package(_topology_dir(tmp_path) / "main.py")
    out = unpack_package(data, package_hash(data), tmp_path / "out")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "helpers.py",
        "lib/more.py",
        "main.py",
    ]
    tampered = data[:-10] + bytes(10)
    with pytest.raises(HeadwaterError, match="refusing topology package: its content hashes"):
        unpack_package(tampered, package_hash(data), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_store_round_trip_and_corruption(tmp_path: Path) -> None:
    store = PackageStore(tmp_path / "store")
    data, _ = build_package(_topology_dir(tmp_path) / "main.py")
    digest = store.put(data)
    assert store.get(digest) == data
    path = tmp_path / "store" / digest.split(":")[1]
    path.write_bytes(data + b"x")
    with pytest.raises(HeadwaterError, match="submit the topology again"):
        store.get(digest)
    with pytest.raises(HeadwaterError, match="is not a package name"):
        store.get("md5:abc")
    with pytest.raises(KeyError):
        store.get(package_hash(b"other"))
    verify_package(data, digest)


def _zip(files: dict[str, bytes]) -> bytes:
    """A zip of ``files``, the same bytes at every call (tests' ids are made of them, and
    the suite's workers must collect the same ids)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def test_package_names_are_sha256_hex_only() -> None:
    """Issue 15, finding 4: a package named 'x:/abs/dir' named a folder outside the workdir."""
    assert digest_problem(package_hash(b"x")) is None
    for bad in ("x:/abs/dir", "sha256:/etc", "sha256:" + "A" * 64, "sha256:" + "0" * 63, ""):
        assert digest_problem(bad) is not None, bad


def test_entries_stay_inside_the_package() -> None:
    """Issue 15, finding 6: ``entry=/etc/passwd`` was executed as Python."""
    for good in ("main.py", "lib/more.py", "./main.py"):
        assert entry_problem(good) is None, good
    for bad in ("", "/etc/passwd", "../x.py", "lib/../../x.py", "a\\b.py", "lib/", "a\0.py"):
        assert entry_problem(bad) is not None, bad


def test_packages_are_bounded_before_anything_is_extracted(tmp_path: Path) -> None:
    """Issue 15, finding 6: a 204 KB zip unpacked to 201 MB; odd bodies gave 500s."""
    bomb = _zip({"main.py": b"x = 1\n", "big.bin": bytes(MAX_UNPACKED_BYTES + 1)})
    assert len(bomb) < 1 << 20
    with pytest.raises(PackageRefusedError, match="unpacks to") as refused:
        unpack_package(bomb, package_hash(bomb), tmp_path / "bomb")
    assert refused.value.too_large
    assert not (tmp_path / "bomb").exists()
    many = _zip({f"f{i}.py": b"" for i in range(MAX_PACKAGE_FILES + 1)})
    with pytest.raises(PackageRefusedError, match="files; the limit is"):
        check_package(many)
    with pytest.raises(PackageRefusedError, match="the limit is") as refused:
        check_package(bytes(MAX_PACKAGE_BYTES + 1))
    assert refused.value.too_large
    for data, says in (
        (b"", "empty"),
        (b"PK\x03\x04 not really", "not a readable zip"),
        (_zip({"../up.py": b""}), "outside its folder"),
        (_zip({"/abs.py": b""}), "outside its folder"),
    ):
        with pytest.raises(PackageRefusedError, match=says) as refused:
            check_package(data)
        assert not refused.value.too_large
    with pytest.raises(PackageMismatchError, match="is not a package name"):
        unpack_package(bomb, "x:" + str(tmp_path / "victim"), tmp_path / "out")


def test_a_package_whose_bytes_do_not_unpack_is_refused(tmp_path: Path) -> None:
    data = bytearray(_zip({"main.py": b"topology = None\n" * 200}))
    data[40:60] = bytes(20)  # the compressed bytes; the directory still reads
    check_package(bytes(data))
    with pytest.raises(PackageRefusedError, match="does not unpack"):
        unpack_package(bytes(data), package_hash(bytes(data)), tmp_path / "out")


def test_the_store_deletes_a_refused_package(tmp_path: Path) -> None:
    store = PackageStore(tmp_path / "store")
    digest = store.put(b"zip")
    assert store.has(digest)
    store.delete(digest)
    assert not store.has(digest)
    store.delete(digest)  # twice is fine


def _patched(data: bytes, where: str, offset: int, fmt: str, value: int) -> bytes:
    """``data`` with one field of its (one) central directory entry or end record set."""
    at = data.rfind(b"PK\x01\x02" if where == "entry" else b"PK\x05\x06") + offset
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


_ONE = _zip({"t.py": b"print(1)\n"})
# found by fuzz/fuzz_package.py: an entry whose name is empty in the directory
_EMPTY_NAME = base64.b64decode(
    "AHQucHkEFAAAAAAA43h3d10GHuE8CQAAAAkAAAAEAAAAAAAAAAAAAACAAQBwcmludCgxKQpQSwECFAMUAAAAAADj"
    "eHddBh7hPAkAAAAJAQAAAAAAABYAAAAAAAAAgAkAAAAAdC5weVBLBQYAAAAAAQABADIAAAArAAAAAAA="
)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        # RuntimeError (password required) at extraction
        (_patched(_ONE, "entry", 8, "<H", 0x1), "is encrypted"),
        # NotImplementedError ("zip file version 23.5") on reading the directory
        (_patched(_ONE, "entry", 6, "<H", 235), "not a readable zip"),
        # IndexError in ZipInfo.is_dir
        (_EMPTY_NAME, "outside its folder"),
        # IsADirectoryError, IsADirectoryError, NotADirectoryError at extraction
        (_zip({".": b""}), "names its folder"),
        (_zip({"a/./": b"", "a": b""}), "named twice or also as a folder"),
        (_zip({"a": b"", "a/b.py": b""}), "both as a file and as a folder"),
        (_zip({"a.py": b"1", "./a.py": b"2"}), "named twice"),  # the second overwrote the first
    ],
)
def test_what_fuzzing_found_in_the_directory_is_refused(data: bytes, says: str) -> None:
    """Each of these raised another exception than PackageRefusedError (in the comments)."""
    with pytest.raises(PackageRefusedError, match=says):
        check_package(data)


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_only_stored_or_deflated_entries_are_taken(method: int) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        zf.writestr("main.py", "x = 1\n")
    with pytest.raises(PackageRefusedError, match=f"method {method}"):
        check_package(buf.getvalue())


def test_a_directory_that_points_before_the_zip_is_refused(tmp_path: Path) -> None:
    """Found by fuzz/fuzz_package.py: ValueError (negative seek value -64) at extraction."""
    data = _patched(_ONE, "end", 16, "<I", len(_ONE) - 22 - 50 + 64)  # the directory's offset
    check_package(data)  # its directory reads
    with pytest.raises(PackageRefusedError, match="does not unpack: negative seek"):
        unpack_package(data, package_hash(data), tmp_path / "out")
