"""Topology packages are deterministic, content-addressed and hash-checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import HeadwaterError
from headwater.common._package import (
    PackageStore,
    build_package,
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
