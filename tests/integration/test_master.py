"""The daemons: `headwater master`, `headwater worker`, and submit/status/kill against them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import psutil
import pytest

from ._daemons import Daemons
from ._support import EXAMPLES, wait_for

pytestmark = pytest.mark.cluster
WORDCOUNT = EXAMPLES / "iot" / "wordcount.py"


def _counts(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for f in out.glob("count-*.json"):
        total.update(json.loads(f.read_text()))
    return total


def test_submit_runs_on_workers_and_kill_stops_it(daemons: Daemons, tmp_path: Path) -> None:
    """As the compose cluster starts: the topology first, then two workers together; each
    gets one of its two containers (before, the first to attach took both)."""
    import runpy

    out = tmp_path / "out"
    out.mkdir()
    # workers that attach within 10 s of each other share what waits (3 s by default; more
    # here, where two Python processes may start seconds apart on a loaded machine)
    daemons.start_master(extra=("--placement-delay", "10"))
    assert "submitted 'wordcount'" in daemons.cli("submit", str(WORDCOUNT), "--containers", "2")
    env = {"WORDCOUNT_OUTPUT": str(out), "WORDCOUNT_RATE": "0"}  # unpaced
    workers = [daemons.start_worker(n, env) for n in ("w1", "w2")]
    expected = Counter(runpy.run_path(str(WORDCOUNT))["expected_counts"]())
    wait_for(lambda: _counts(out) == expected, 90, "exact word counts")

    nodes = {n["id"]: n for n in daemons.api("/api/v1/nodes")}
    wait_for(
        lambda: all(n["containers"] for n in daemons.api("/api/v1/nodes")), 10, "status reports"
    )
    nodes = {n["id"]: n for n in daemons.api("/api/v1/nodes")}
    assert {w: nodes[w]["containers"] for w in ("w1", "w2")} == {
        "w1": ["wordcount/0"],
        "w2": ["wordcount/1"],
    }
    assert all(n["kind"] == "worker" and n["online"] for n in nodes.values())
    tasks = daemons.api("/api/v1/topologies/wordcount/metrics")["tasks"]
    worker_pids = {w.pid for w in workers}
    for m in tasks.values():  # every instance runs under a worker: container -> instance
        ancestors = {p.pid for p in psutil.Process(int(m["pid"])).parents()}
        assert ancestors & worker_pids
    assert "topology wordcount  state RUNNING" in daemons.cli("status", "wordcount")

    daemons.cli("kill", "wordcount")
    wait_for(lambda: not any(w.children() for w in workers), 30, "containers to stop")
    assert daemons.api("/api/v1/topologies") == []


def test_a_package_whose_hash_does_not_match_is_refused(daemons: Daemons) -> None:
    daemons.start_master()
    daemons.cli("submit", str(WORDCOUNT))  # no worker yet: its container waits
    store = Path(daemons.tmp / "master" / "packages")
    (stored,) = list(store.iterdir())
    stored.write_bytes(stored.read_bytes()[:-8] + b"tampered")
    worker = daemons.start_worker("w1")

    def refused() -> str | None:
        nodes = daemons.api("/api/v1/nodes")
        return nodes[0]["error"] if nodes and nodes[0]["error"] else None

    error = wait_for(refused, 30, "the worker to refuse the package")
    assert "refusing topology package" in error
    assert "submit the topology again" in error
    assert not worker.children()  # nothing ran
    assert "refusing topology package" in (daemons.tmp / "w1.log").read_text()
