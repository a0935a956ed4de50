"""fuzz/: every harness writes its seeds and fuzzes a few hundred inputs without a finding.

``scripts/fuzz`` fuzzes for a minute each (CI); this keeps the harnesses from rotting
between the two: a harness that no longer imports, or whose seeds no longer pass, fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import atheris  # type: ignore[import-untyped]  # noqa: F401  (dev extra: missing fails, never skips)
import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESSES = sorted((ROOT / "fuzz").glob("fuzz_*.py"))


def test_there_is_a_harness_per_target() -> None:
    assert [h.stem for h in HARNESSES] == [
        "fuzz_codec",
        "fuzz_frames",
        "fuzz_package",
        "fuzz_receiver",
    ]


@pytest.mark.parametrize("harness", HARNESSES, ids=lambda h: h.stem)
def test_a_harness_runs_its_seeds_and_200_inputs(harness: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    corpus = tmp_path / "corpus"
    subprocess.run(
        [sys.executable, str(harness), "--seeds", str(corpus)],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert len(list(corpus.iterdir())) >= 4
    done = subprocess.run(
        [
            sys.executable,
            str(harness),
            "-runs=200",
            "-seed=1",
            "-timeout=10",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        env=env,
        check=False,  # a finding is a non-zero exit: shown below
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Done 200 runs" in done.stderr
    assert not list(tmp_path.glob("crash-*"))
