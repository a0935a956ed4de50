"""Finding 8: an exactly-once topology with more containers than instances.

A fused DSL pipeline is one instance; with `--containers 2` (or 3) every other
container is empty. Before, the restore every exactly-once run starts with waited
for an empty container's instances to say hello, so the topology stayed RESTORING
forever and processed nothing. Now an empty container acknowledges a restore at
once, and every record comes out exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from headwater.cloud.local import state_dir

from .._wait import wait_for
from ..integration._daemons import Daemons
from ..integration.test_exactly_once import KEYS, _produce
from ._report import record

FUSED = Path(__file__).parent / "topologies" / "fused_eo.py"
N = 2000
pytestmark = pytest.mark.cluster


def _rows(out: Path) -> list[tuple[str, int]]:
    f = out / "rows.jsonl"
    if not f.exists():
        return []
    rows = (json.loads(line) for line in f.read_text().splitlines() if line)
    return [(key, seq) for key, seq in rows]


def _status() -> str:
    cmd = [sys.executable, "-m", "headwater", "status"]
    return subprocess.run(cmd, capture_output=True, check=True, text=True, timeout=30).stdout


@pytest.mark.parametrize("containers", [2, 3])
def test_a_fused_pipeline_on_more_containers_than_instances_runs_exactly_once(
    tmp_path: Path, containers: int
) -> None:
    _produce(tmp_path / "log", N)
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "HW_TEST_LOG": str(tmp_path / "log"), "HW_TEST_OUT": str(out)}
    began = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headwater",
            "run",
            str(FUSED),
            "--containers",
            str(containers),
            "--duration",
            "120",
            "--quiet",
            "--workdir",
            str(tmp_path / "run"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: list(state_dir().glob("*.json")), 30, "the run to record its master")
        try:
            wait_for(lambda: len(_rows(out)) >= N, 60, f"{N} rows")
            first_all = time.monotonic() - began
        finally:
            rows = _rows(out)
            counts = Counter(rows)
            want = {(f"k{i % KEYS}", i // KEYS) for i in range(N)}
            lost = len(want - set(counts))
            duplicated = sum(n - 1 for n in counts.values())
            record(
                f"run: exactly-once fused pipeline on {containers} containers (1 instance)",
                detect_s=None,
                recover_s=round(time.monotonic() - began, 1),
                readings=N,
                lost=lost,
                duplicated=duplicated,
            )
        status = _status()
        assert "state RUNNING" in status, status
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output
    assert set(counts) == want
    assert (lost, duplicated) == (0, 0)
    assert len(_rows(out)) == N  # nothing more after the wait
    print(f"{N} rows in {first_all:.1f}s")


def test_a_fused_pipeline_submitted_with_more_containers_than_instances_runs(
    daemons: Daemons, tmp_path: Path
) -> None:
    """The master daemon's submit path deals an empty container to a worker the same way."""
    _produce(tmp_path / "log", N)
    out = tmp_path / "out"
    out.mkdir()
    daemons.start_master()
    daemons.start_worker("w1", {"HW_TEST_LOG": str(tmp_path / "log"), "HW_TEST_OUT": str(out)})
    began = time.monotonic()
    daemons.cli("submit", str(FUSED), "--containers", "2")
    try:
        wait_for(lambda: len(_rows(out)) >= N, 60, f"{N} rows")
    finally:
        counts = Counter(_rows(out))
        want = {(f"k{i % KEYS}", i // KEYS) for i in range(N)}
        record(
            "submit: exactly-once fused pipeline on 2 containers (1 instance)",
            detect_s=None,
            recover_s=round(time.monotonic() - began, 1),
            readings=N,
            lost=len(want - set(counts)),
            duplicated=sum(n - 1 for n in counts.values()),
        )
    assert set(counts) == want and len(_rows(out)) == N
    assert "RUNNING" in daemons.cli("status", "fused_eo")
