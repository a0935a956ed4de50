"""deploy/compose: the images built here, `docker-compose up -d`, and readings of both sites
counted exactly once in the cloud's windows, the landing zone and the Spark rollups: first
with nothing going wrong, then through each fault across the cluster's containers (an agent
cut off the network for 60 s, a worker killed, the master restarted, a stream manager's
container paused, the broker restarted).

Runs docs/docker.md's commands as a user would (``deploy/compose/build``, then ``up -d`` in
deploy/compose), with its own project name and its ports on the host's loopback only."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from .._workers import DEFAULT_PORTS
from ..conftest import show_on_failure
from ._compose import EXEC_POLL, ComposeCluster, build_image, compose_cluster
from ._compose_rounds import SITES, agent_status, docker, fault_round, running
from ._support import wait_for

# the cluster publishes the master on the host's default ports (DEFAULT_PORTS)
pytestmark = [pytest.mark.compose, pytest.mark.timeout(900), DEFAULT_PORTS]

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


def test_compose_up_brings_every_reading_of_both_sites_to_the_windows_and_the_rollups(
    cluster: ComposeCluster,
) -> None:
    running = cluster.compose("ps", "--services", "--filter", "status=running").split()
    for service in ("master", "mosquitto", "worker", "agent-site0", "agent-site1"):
        assert service in running, running
    assert len(cluster.containers("worker")) == 2

    published = fault_round(cluster, lambda: None)
    assert all(n > 0 for n in published.values()), published
    # the example's two containers, submitted before the workers started, one on each
    wait_for(
        lambda: cluster.python("master", WORKER_CONTAINERS) == [["iot/0"], ["iot/1"]],
        30,
        "one of the IoT example's containers on each worker",
        interval=EXEC_POLL,
    )

    # the uplinks stayed up all along (idle ones were once dropped by the server's
    # keepalive policy every 20 s)
    for site in SITES:
        assert cluster.python(f"agent-{site}", UPLINK_LOSSES) == 0
    # and no process of a topology died (a gRPC fork handler once aborted one at start)
    assert "exited with" not in cluster.logs("worker", "agent-site0", "agent-site1")
    assert "fork_posix" not in cluster.logs("worker", "agent-site0", "agent-site1")


def test_an_agent_cut_off_the_network_for_60_s_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    network = f"{cluster.project}_headwater"
    agent = cluster.container("agent-site0")

    def cut() -> None:
        docker("network", "disconnect", network, agent)
        try:
            cut_at = time.monotonic()
            wait_for(
                lambda: agent_status(cluster, "site0")["metrics"].get("uplink_connected") == 0,
                50,
                "the agent to see its uplink down",
                interval=EXEC_POLL,
            )
            time.sleep(max(0.0, 60 - (time.monotonic() - cut_at)))  # the cut's length
        finally:
            docker("network", "connect", "--alias", "agent-site0", network, agent)

    fault_round(cluster, cut)
    assert agent_status(cluster, "site0")["metrics"]["uplink_connected"] == 1


def test_a_killed_worker_container_restarts_and_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    worker = cluster.container("worker", 0)

    def kill() -> None:
        # SIGKILL to its init from the host: a crash, which the restart policy answers
        # (`docker kill` counts as a stop by hand, after which Docker restarts nothing)
        pid, started = docker(
            "inspect", "-f", "{{.State.Pid}} {{.State.StartedAt}}", worker
        ).split()
        os.kill(int(pid), signal.SIGKILL)
        wait_for(
            lambda: (
                docker("inspect", "-f", "{{.State.StartedAt}}", worker).strip() != started
                and running(worker)
            ),
            60,
            "its restart policy to start it again",
        )

    fault_round(cluster, kill)


def test_a_restarted_master_container_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    fault_round(cluster, lambda: cluster.compose("restart", "--timeout", "10", "master"))


def test_a_paused_stream_manager_container_loses_and_duplicates_nothing(
    cluster: ComposeCluster,
) -> None:
    # a worker that runs one of the topology's stream managers (the one with the most processes)
    worker = max(
        cluster.containers("worker"),
        key=lambda c: len(docker("top", c).splitlines()),
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
            docker("unpause", worker)

    fault_round(cluster, pause)


def test_a_restarted_broker_loses_and_duplicates_nothing(cluster: ComposeCluster) -> None:
    fault_round(cluster, lambda: cluster.compose("restart", "--timeout", "10", "mosquitto"))
