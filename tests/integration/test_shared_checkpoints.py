"""Checkpoints that outlive a worker (issue 38): a master and two workers sharing a checkpoint
store in a real Garage; the worker that runs a container is killed and its disk wiped, as a
host lost with its disk; the master moves the container to the other worker, which restores
it from the bucket, and every count is exact."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from .._garage import Garage
from ._daemons import Daemons
from ._support import TOPOLOGIES, committed_rows, wait_for
from .test_exactly_once import _check_exact, _check_windows, _produce

pytestmark = pytest.mark.cluster
TOPOLOGY = "exactly-once"


def test_a_container_restarted_on_another_worker_restores_from_the_shared_store(
    daemons: Daemons, garage: Garage, tmp_path: Path
) -> None:
    n = 80_000
    log, out = tmp_path / "log", tmp_path / "out"
    _produce(log, n)
    env = {"HW_TEST_LOG": str(log), "HW_TEST_OUT": str(out), "HW_TEST_RATE": "2000"}
    store = (
        *("--checkpoint-store", "s3://checkpoints/cluster-a", "--s3-endpoint", garage.endpoint),
        *("--s3-region", garage.region),
        *("--s3-credentials", str(garage.write_credentials(tmp_path / "s3-credentials"))),
    )
    daemons.start_master(extra=("--placement-delay", "10", "--failover-after", "3"))
    assert f"submitted '{TOPOLOGY}'" in daemons.cli(
        "submit", str(TOPOLOGIES / "exactly_once.py"), "--containers", "2"
    )
    workers = {name: daemons.start_worker(name, env, more=store) for name in ("w1", "w2")}

    def running() -> dict[str, list[str]]:
        nodes = daemons.api("/api/v1/nodes")
        return {n["id"]: sorted(n["containers"]) for n in nodes if n["online"]}

    def placed_once() -> dict[str, list[str]] | None:
        now = running()
        every = sorted(c for cs in now.values() for c in cs)
        return now if every == [f"{TOPOLOGY}/0", f"{TOPOLOGY}/1"] else None

    placed = wait_for(placed_once, 90, "each container running on a worker")
    victim = next(w for w, cs in placed.items() if f"{TOPOLOGY}/0" in cs)
    survivor = next(w for w in workers if w != victim)

    def checkpoints() -> dict[str, int]:
        return daemons.api(f"/api/v1/topologies/{TOPOLOGY}/checkpoints")  # type: ignore[no-any-return]

    wait_for(lambda: len(committed_rows(out)) >= 10_000, 120, "10,000 rows committed")
    wait_for(lambda: checkpoints()["latest_complete"] >= 3, 60, "three complete checkpoints")
    epoch = checkpoints()["epoch"]

    # the host is lost with its disk: the worker and its containers die, the disk is gone
    proc = workers[victim]
    children = proc.children(recursive=True)
    os.kill(proc.pid, signal.SIGKILL)
    for child in children:  # they die with their parent (PR_SET_PDEATHSIG); make sure
        child.wait(20)
    proc.wait(20)
    lost_at = len(committed_rows(out))
    shutil.rmtree(daemons.tmp / victim)

    wait_for(
        lambda: running().get(survivor) == [f"{TOPOLOGY}/0", f"{TOPOLOGY}/1"],
        60,
        f"{survivor} running both containers",
    )
    wait_for(lambda: len(committed_rows(out)) >= n, 240, "every record at the sink")
    _check_exact(out, n)
    _check_windows(Path(f"{out}-windows"), n)
    assert lost_at < n  # the loss came while records still flowed
    assert checkpoints()["epoch"] > epoch  # restored, in a new epoch

    # it was the bucket's copy: the survivor never held container 0's state before
    moved = daemons.tmp / survivor / TOPOLOGY / "container-0" / "container.log"
    assert "read from cluster-a/" in moved.read_text()
    master_log = (daemons.tmp / "master.log").read_text()
    assert f"container 0 of '{TOPOLOGY}' moves to {survivor}" in master_log
    # cluster-a/CLUSTER/TOPOLOGY/CONTAINER/...: one topology, its two containers
    keys = [k.split("/") for k in garage.objects().listing("cluster-a/")]
    assert {(k[2], k[3]) for k in keys} == {(TOPOLOGY, "0"), (TOPOLOGY, "1")}
    assert len({k[1] for k in keys}) == 1  # one cluster
