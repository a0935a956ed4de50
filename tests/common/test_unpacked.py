"""A package unpacked on a node: sealed, and every change to it found (common/_unpacked.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.common._exceptions import PackageMismatchError
from headwater.common._package import build_package, package_hash
from headwater.common._unpacked import MARK, drift, fresh, remove


@pytest.fixture
def package(tmp_path: Path) -> tuple[bytes, str]:
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "pipeline.py").write_text("topology = None\n")
    (src / "lib" / "helpers.py").write_text("X = 1\n")
    data, _entry = build_package(src / "pipeline.py")
    return data, package_hash(data)


def test_fresh_unpacks_sealed_and_finds_no_drift(
    tmp_path: Path, package: tuple[bytes, str]
) -> None:
    data, digest = package
    code = fresh(data, digest, tmp_path / "code")
    assert (code / MARK).exists()
    assert (code / "pipeline.py").stat().st_mode & 0o777 == 0o444
    assert (code / "lib").stat().st_mode & 0o777 == 0o555
    assert code.stat().st_mode & 0o777 == 0o555
    assert drift(data, code) is None


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (lambda c: (c / "pipeline.py").write_text("import os\n"), "pipeline.py was changed"),
        (lambda c: (c / "lib" / "helpers.py").unlink(), "lib/helpers.py is missing"),
        (lambda c: (c / "extra.py").write_text(""), "extra.py was added"),
        (lambda c: (c / "__pycache__").mkdir(), "__pycache__ was added"),
    ],
)
def test_drift_finds_each_kind_of_change_and_fresh_undoes_it(
    tmp_path: Path, package: tuple[bytes, str], change: object, found: str
) -> None:
    data, digest = package
    code = fresh(data, digest, tmp_path / "code")
    for p in (code, code / "lib", code / "pipeline.py", code / "lib" / "helpers.py"):
        p.chmod(0o755 if p.is_dir() else 0o644)  # what an attacker as the owner would do first
    change(code)  # type: ignore[operator]
    assert drift(data, code) == found
    fresh(data, digest, code)
    assert drift(data, code) is None


def test_fresh_refuses_bytes_that_do_not_hash_to_the_name(
    tmp_path: Path, package: tuple[bytes, str]
) -> None:
    data, digest = package
    with pytest.raises(PackageMismatchError):
        fresh(data + b"x", digest, tmp_path / "code")
    assert not (tmp_path / "code").exists()


def test_remove_deletes_a_sealed_folder(tmp_path: Path, package: tuple[bytes, str]) -> None:
    data, digest = package
    code = fresh(data, digest, tmp_path / "code")
    remove(code)
    assert not code.exists()
    remove(code)  # nothing there: nothing to do
