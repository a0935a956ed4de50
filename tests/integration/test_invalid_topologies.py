"""Acceptance 7: invalid topologies fail before any process starts, naming component and fix."""

from __future__ import annotations

import subprocess
import sys

import pytest

from headwater.cloud.local import state_dir

from ._support import TOPOLOGIES

INVALID = TOPOLOGIES


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("cycle.py", ["cycle:", "'upper'", "'lower'", "a topology must be a DAG"]),
        ("unknown_input.py", ["bolt 'count'", "unknown component 'wrods'", "did you mean 'words'"]),
        ("duplicate.py", ["'count' is defined twice", "Give each a unique name"]),
        (
            "undeclared_field.py",
            ["bolt 'count'", "undeclared field(s) 'sensor'", "the stream declares 'word'"],
        ),
        (
            "unserialisable.py",
            ["spout 'words'", "field 'lock'", "cannot be serialised", "convert the value"],
        ),
    ],
)
def test_invalid_topology_fails_before_any_process_starts(file: str, expected: list[str]) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "headwater",
            "run",
            str(INVALID / f"invalid_{file}"),
            "--containers",
            "2",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("headwater: error: ")
    for text in expected:
        assert text in proc.stderr, proc.stderr
    assert "running" not in proc.stdout  # nothing was started
    assert not list(state_dir().glob("*.json"))


def test_bad_arguments_say_what_to_do() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "headwater", "run", "nope.py", "--containers", "0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--containers: must be 1 or more, got 0" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "headwater", "run", "nope.py"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "no topology file at 'nope.py': check the path" in proc.stderr
