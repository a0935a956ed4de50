"""deploy/compose: the images built here, `docker-compose up -d`, and readings of both sites
counted exactly once in the cloud's windows, the landing zone and the Spark rollups: first
with nothing going wrong, then through each fault across the cluster's containers (an agent
cut off the network for 60 s, a worker killed, the master restarted, a stream manager's
container paused, the broker restarted).

Runs docs/docker.md's commands as a user would (``deploy/compose/build``, then ``up -d`` in
deploy/compose), with its own project name and its ports on the host's loopback only."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .._workers import DEFAULT_PORTS
from ..conftest import show_on_failure
from ._compose import ComposeCluster, build_image, compose_cluster
from ._support import wait_for

# the cluster publishes the master on the host's default ports (DEFAULT_PORTS)
pytestmark = [pytest.mark.compose, pytest.mark.timeout(900), DEFAULT_PORTS]
SITES = ("site0", "site1")

# run in the spark-jobs container (it mounts the data volume): what landed, and the rollups
LANDED = """
import collections, json
from headwater.common.connectors import read_landing
root = "/var/lib/headwater/data/iot/landing"
readings = read_landing(root, "readings", ["site", "sensor", "seq", "ts"])
windows = read_landing(root, "sensor_windows", ["site", "sensor", "window", "count"])
per_site = collections.Counter(r["site"] for r in readings)
keys = collections.Counter((r["sensor"], r["seq"]) for r in readings)
in_window = collections.Counter((r["sensor"], r["ts"] - r["ts"] % 10_000) for r in readings)
print(json.dumps({
    "readings": per_site,
    "duplicates": sum(n - 1 for n in keys.values()),
    "window_sites": sorted({w["site"] for w in windows}),
    "window_mismatches": [
        w for w in windows if w["count"] != in_window[(w["sensor"], w["window"])]
    ],
}))
"""
# run in an agent's container: how often its uplinks were lost (nothing cuts them here)
UPLINK_LOSSES = """
import json, pathlib
logs = pathlib.Path("/var/lib/headwater/agent").rglob("container.log")
print(json.dumps(sum(p.read_text().count(" lost; backlog ") for p in logs)))
"""
# run in the master's container: the IoT example's containers on each worker
WORKER_CONTAINERS = """
import json, urllib.request
token = open("/var/lib/headwater/master/admin.token").read().strip()
req = urllib.request.Request(
    "http://127.0.0.1:7071/api/v1/nodes", headers={"Authorization": f"Bearer {token}"}
)
nodes = json.load(urllib.request.urlopen(req, timeout=10))
print(json.dumps(sorted(n["containers"] for n in nodes if n["kind"] == "worker")))
"""
AGENT_STATUS = """
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:7080/status", timeout=5).read().decode())
"""
ROLLUPS = """
import collections, json, pathlib
import pyarrow.parquet as pq
out = {}
for table in ("daily_site", "hourly_site", "daily_sensor"):
    folder = pathlib.Path("/var/lib/headwater/data/warehouse") / table
    counts = collections.Counter()
    for part in folder.glob("date=*/data.parquet"):
        key = "sensor" if "sensor" in table else "site"
        rows = pq.read_table(part, columns=["count", key])
        for row in rows.to_pylist():
            key = row.get("site") or "site" + row["sensor"].split("-")[0][1:]
            counts[key] += row["count"]
    out[table] = counts
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[ComposeCluster]:
    """One compose cluster for the module's rounds, in order: a clean one, then one per fault;
    a round that fails shows every service's last log lines."""
    image = build_image()
    assert image.startswith("headwater:")
    with compose_cluster(f"hwtest{os.getpid()}", {"HEADWATER_SENSOR_RATE": "5"}) as c:
        show_on_failure(
            request.node, "compose logs", lambda: c.run("logs", "--no-color", "--tail", "40").stdout
        )
        yield c


def _published(cluster: ComposeCluster) -> dict[str, int]:
    """Per site, the readings its sensors' runs had the broker acknowledge, all told: the sum
    of the next seqs its state keeps (seqs start at 0, and a sensor's seq moves on only once
    the broker acknowledged it). Read from the stopped container's state file, not its log
    (a log the engine cannot read whole drops runs' closing lines); each run must have ended
    on its SIGTERM, not been killed or restarted, or a taken seq may never have been sent."""
    out = {}
    for site in SITES:
        container = cluster.container(f"sensors-{site}")
        code, restarts = _docker(
            "inspect", "-f", "{{.State.ExitCode}} {{.RestartCount}}", container
        ).split()
        tail = cluster.run("logs", "--no-color", "--tail", "20", f"sensors-{site}").stdout
        assert (code, restarts) == ("0", "0"), (
            f"sensors-{site} exited with {code} after {restarts} restarts:\n{tail}"
        )
        tar = subprocess.run(
            ["docker", "cp", f"{container}:/var/lib/headwater/sensors/{site}.json", "-"],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert tar.returncode == 0, f"docker cp of sensors-{site}'s state: {tar.stderr!r}"
        with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
            member = archive.extractfile(f"{site}.json")
            assert member is not None, f"sensors-{site}'s state is not a file"
            out[site] = sum(json.loads(member.read()).values())
    return out


def _landed(cluster: ComposeCluster) -> dict[str, Any]:
    landed: dict[str, Any] = cluster.python("spark-jobs", LANDED)
    return landed


def _settle(
    cluster: ComposeCluster, cond: Callable[[], bool], timeout: float, what: Callable[[], str]
) -> None:
    """``wait_for(cond)``; on a timeout, the failure says what was last seen and where the
    agents and the workers stand."""
    try:
        wait_for(cond, timeout, "")
    except AssertionError:
        agents = {
            site: {
                k: v
                for k, v in _agent_status(cluster, site)["metrics"].items()
                if not k.startswith("component:")
            }
            for site in SITES
        }
        workers = cluster.run("logs", "--no-color", "--tail", "30", "worker").stdout
        raise AssertionError(f"{what()}\nagents: {agents}\nworkers:\n{workers}") from None


def _round(cluster: ComposeCluster, fault: Callable[[], object]) -> dict[str, int]:
    """Sensors publish while ``fault`` runs; once they stop, every reading they published is
    landed exactly once, each closed window counts exactly the readings landed in it, and
    the Spark rollups count every one: the per-site totals."""
    cluster.compose("start", "sensors-site0", "sensors-site1")
    before = sum(_landed(cluster)["readings"].values())

    def under_way() -> bool:
        # new readings land, and each site has a closed window landed: the windows close on
        # the readings' event time, so sensors stopped too soon would leave every one open
        now = _landed(cluster)
        return bool(
            sum(now["readings"].values()) > before + 60 and now["window_sites"] == list(SITES)
        )

    wait_for(under_way, 240, "new readings and both sites' windows landing before the fault")
    fault()
    cluster.compose("stop", "--timeout", "20", "sensors-site0", "sensors-site1")
    published = _published(cluster)
    last: dict[str, Any] = {}

    def all_landed() -> bool:
        last.update(_landed(cluster))
        return bool(last["readings"] == published)

    _settle(cluster, all_landed, 300, lambda: f"{published} readings landed (last: {last})")
    assert last["duplicates"] == 0
    assert last["window_sites"] == list(SITES)
    assert last["window_mismatches"] == []

    rolled: dict[str, Any] = {}

    def all_rolled_up() -> bool:
        rolled.update(cluster.python("spark-jobs", ROLLUPS))
        return all(rolled[t] == published for t in ("daily_site", "hourly_site", "daily_sensor"))

    _settle(
        cluster, all_rolled_up, 300, lambda: f"the rollups to count {published} (last: {rolled})"
    )
    return published


def _docker(*args: str) -> str:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr}"
    return done.stdout


def _running(container: str) -> bool:
    return _docker("inspect", "-f", "{{.State.Running}}", container).strip() == "true"


def test_compose_up_brings_every_reading_of_both_sites_to_the_windows_and_the_rollups(
    cluster: ComposeCluster,
) -> None:
    running = cluster.compose("ps", "--services", "--filter", "status=running").split()
    for service in ("master", "mosquitto", "worker", "agent-site0", "agent-site1"):
        assert service in running, running
    assert len(cluster.compose("ps", "-q", "worker").split()) == 2

    published = _round(cluster, lambda: None)
    assert all(n > 0 for n in published.values()), published
    # the example's two containers, submitted before the workers started, one on each
    wait_for(
        lambda: cluster.python("master", WORKER_CONTAINERS) == [["iot/0"], ["iot/1"]],
        30,
        "one of the IoT example's containers on each worker",
    )

    # the uplinks stayed up all along (idle ones were once dropped by the server's
    # keepalive policy every 20 s)
    for site in SITES:
        assert cluster.python(f"agent-{site}", UPLINK_LOSSES) == 0
    # and no process of a topology died (a gRPC fork handler once aborted one at start)
    assert "exited with" not in cluster.logs("worker", "agent-site0", "agent-site1")
    assert "fork_posix" not in cluster.logs("worker", "agent-site0", "agent-site1")


def _agent_status(cluster: ComposeCluster, site: str) -> dict[str, Any]:
    status: dict[str, Any] = cluster.python(f"agent-{site}", AGENT_STATUS)
    return status


def test_an_agent_cut_off_the_network_for_60_s_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    network = f"{cluster.project}_headwater"
    agent = cluster.container("agent-site0")

    def cut() -> None:
        _docker("network", "disconnect", network, agent)
        try:
            cut_at = time.monotonic()
            wait_for(
                lambda: _agent_status(cluster, "site0")["metrics"].get("uplink_connected") == 0,
                50,
                "the agent to see its uplink down",
            )
            time.sleep(max(0.0, 60 - (time.monotonic() - cut_at)))  # the cut's length
        finally:
            _docker("network", "connect", "--alias", "agent-site0", network, agent)

    _round(cluster, cut)
    assert _agent_status(cluster, "site0")["metrics"]["uplink_connected"] == 1


def test_a_killed_worker_container_restarts_and_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    worker = cluster.container("worker", 0)

    def kill() -> None:
        # SIGKILL to its init from the host: a crash, which the restart policy answers
        # (`docker kill` counts as a stop by hand, after which Docker restarts nothing)
        pid, started = _docker(
            "inspect", "-f", "{{.State.Pid}} {{.State.StartedAt}}", worker
        ).split()
        os.kill(int(pid), signal.SIGKILL)
        wait_for(
            lambda: (
                _docker("inspect", "-f", "{{.State.StartedAt}}", worker).strip() != started
                and _running(worker)
            ),
            60,
            "its restart policy to start it again",
        )

    _round(cluster, kill)


def test_a_restarted_master_container_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    _round(cluster, lambda: cluster.compose("restart", "--timeout", "10", "master"))


def test_a_paused_stream_manager_container_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    # a worker that runs one of the topology's stream managers (the one with the most processes)
    worker = max(
        cluster.compose("ps", "-q", "worker").split(),
        key=lambda c: len(_docker("top", c).splitlines()),
    )

    def pause() -> None:
        # the kernel's freezer can time out on a busy container (runc: "unable to freeze";
        # a process in uninterruptible I/O) and runc thaws it again: try until it holds
        def frozen() -> bool:
            done = subprocess.run(
                ["docker", "pause", worker], capture_output=True, check=False, timeout=60
            )
            return done.returncode == 0

        wait_for(frozen, 120, f"docker pause {worker} to hold", interval=2)
        try:
            time.sleep(20)  # the pause's length
        finally:
            _docker("unpause", worker)

    _round(cluster, pause)


def test_a_restarted_broker_loses_and_duplicates_nothing(cluster: ComposeCluster) -> None:
    _round(cluster, lambda: cluster.compose("restart", "--timeout", "10", "mosquitto"))
