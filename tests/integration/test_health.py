"""docs/health.md's "Self-regulation" block, run as written on a master and a worker: the
policy set to recommend with the CLI, and `headwater health` printing the report."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from headwater.cloud.master._health_sample import task_samples

from ._daemons import Daemons
from ._readme import block, command_of
from ._support import wait_for

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
METRICS = "/api/v1/topologies/editable/metrics"


def test_the_health_commands_set_the_policy_and_print_the_report(
    daemons: Daemons, tmp_path: Path
) -> None:
    commands = [shlex.split(command_of(line)) for line in block("Self-regulation #0").lines]
    assert [c[:3] for c in commands] == [["headwater", "health", "editable"]] * 3
    daemons.start_master(extra=("--health-interval", "0.5"))
    daemons.start_worker("w1", {"EDITABLE_OUT": str(tmp_path / "out")})
    wait_for(lambda: any(n["online"] for n in daemons.api("/api/v1/nodes")), 30, "a worker")
    daemons.cli("submit", str(ROOT / "examples" / "editable" / "topology.py"))
    env = {**os.environ, "HEADWATER_MASTER": daemons.http, "HEADWATER_TOKEN": daemons.token}

    def run(args: list[str], code: int = 0) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [sys.executable, "-m", "headwater", *args[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert res.returncode == code, f"{shlex.join(args)}: {res.stdout}{res.stderr}"
        return res

    set_policy, show, raw = commands
    assert run(set_policy).stdout.startswith("topology editable: mode recommend\n")
    # the topology running and reported: what the loop reads (recommend changes nothing)
    wait_for(
        lambda: {t.component for t in task_samples(daemons.api(METRICS)).values()} >= {"counter"},
        60,
        "the counter's tasks reported",
    )
    text = run(show).stdout
    assert text.splitlines()[:2] == [
        "topology editable: mode recommend",
        "  parallelism 1..4, target utilization 0.7",
    ]
    assert "diagnoses:" in text and "actions taken:" in text and "black-listed:" in text
    report = json.loads(run(raw).stdout)
    assert report["mode"] == "recommend" and report["policy"]["max_parallelism"] == 4
    assert {"diagnoses", "proposed", "taken", "blacklisted"} <= set(report)
    revisions = daemons.api("/api/v1/topologies/editable/revisions")
    assert revisions["current"] == 1
    err = run(["headwater", "health", "ghost"], code=2).stderr
    assert "no topology named 'ghost'" in err and "Traceback" not in err
    err = run(["headwater", "health", "editable", "--min", "5", "--max", "2"], code=2).stderr
    assert "give a min no larger than the max" in err and "Traceback" not in err
    assert "health manager of editable failed" not in daemons.logs()  # every sample was built
    policy = json.loads((daemons.tmp / "master" / "health" / "editable.policy.json").read_text())
    assert policy["mode"] == "recommend"
