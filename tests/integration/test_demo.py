"""The README's first command: `headwater demo` runs and stops cleanly."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.cluster


def test_demo_runs_and_stops() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "headwater", "demo", "--duration", "8"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "running 'demo-wordcount': 5 instances in 2 containers" in out
    assert "topology master: http://127.0.0.1:" in out
    assert out.rstrip().endswith("stopped")
    counts = [line.split() for line in out.splitlines() if line.startswith("count ")]
    assert counts and int(counts[-1][2]) > 0  # the count bolt executed words
