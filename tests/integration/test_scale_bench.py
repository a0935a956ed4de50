"""``python -m bench scale``: the sweep runs each point's runners on real processes (a local
cluster of N tasks per stage over two stream managers; Bytewax's N worker processes over an
N-partition source), checks their results against the floor's, and writes the curve (JSON
and PNG); points above the machine's cores are left out and said so; bad options get a
message, not a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import main

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def _bench(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", "scale", *argv],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_sweep_writes_each_point_s_figures_and_the_curve(tmp_path: Path) -> None:
    out = tmp_path / "scale-wordcount.json"
    cores = len(os.sched_getaffinity(0))
    done = _bench(
        "--pipeline", "wordcount", "--size", "2000", "--runs", "1", "--points", "1,2,64",
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"this machine has {cores} cores: leaving out [64]" in done.stdout
    result = json.loads(out.read_text())
    assert (result["pipeline"], result["size"], result["unit"]) == ("wordcount", 2000, "words/s")
    assert result["machine"]["nproc"] == cores and result["left_out"]["points"] == [64]
    assert [(p["tasks"], p["containers"]) for p in result["points"]] == [(1, 1), (2, 2)]
    for p in result["points"]:
        assert [len(p["runs"][r]) for r in ("floor", "headwater-par", "bytewax-par")] == [1] * 3
        for runner in ("headwater-par", "bytewax-par"):
            figures = p[runner]
            assert figures["per_s"] > 0 and figures["peak_rss_mb"] > 10
            assert figures["efficiency"] == pytest.approx(  # rounded to 3 places
                figures["per_s"] / (p["tasks"] * p["floor_per_s"]), abs=6e-4
            )
        roles = [proc["process"] for proc in p["runs"]["headwater-par"][0]["processes"]]
        # N tasks per stage: the source's N and the count's N, forked by their containers
        assert roles.count("container") == p["containers"]
        assert roles.count("instance") == 2 * p["tasks"], roles
        assert [proc["process"] for proc in p["runs"]["bytewax-par"][0]["processes"]] == [
            "bytewax"
        ] * p["tasks"]
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_floor_par_runs_n_floors_at_once_and_agrees_with_the_floor(tmp_path: Path) -> None:
    """The machine's own ceiling: N floor processes over the N files, no exchange; for IoT
    (split by sensor) their results together are the floor's, which the sweep checks."""
    out = tmp_path / "scale-iot.json"
    done = _bench(
        "--pipeline", "iot", "--size", "6000", "--runs", "1", "--points", "2",
        "--runners", "floor-par", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (point,) = json.loads(out.read_text())["points"]
    assert set(point["runs"]) == {"floor", "floor-par"} and "headwater / bytewax" not in point
    (run,) = point["runs"]["floor-par"]
    assert [proc["process"] for proc in run["processes"]] == ["floor", "floor"]
    assert point["floor-par"]["per_s"] > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--points", "0,2"], "give task counts, e.g. 1,2,4"),
        (["--points", "two"], "give task counts, e.g. 1,2,4"),
        (["--containers", "-1"], "give a whole number, 1 or more"),
        (["--runners", "spark"], "runners are among headwater-par,bytewax-par,floor-par"),
        (["--points", "4096"], "no point of the sweep fits this machine's cores; give --points"),
    ],
)
def test_a_bad_option_is_refused_with_what_to_give(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(["scale", *argv])
    except SystemExit as e:  # argparse's refusal
        status = e.code  # type: ignore[assignment]
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
