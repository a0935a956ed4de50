"""The Docker scheduler on a real Docker Engine (issue 17, acceptance point 3).

A real master process on the host, ``--scheduler docker``, listening on the gateway
of a Docker network the test makes; the cluster's image (``headwater:latest``, made
by deploy/compose/build; ``HEADWATER_IMAGE`` names another). One topology of two
containers with resource config: each runs in a Docker container with exactly the
scheduler's labels and the topology's limits, and processes every tuple (exact counts,
through the metrics). ``headwater logs`` prints a container's logs. The master,
SIGKILLed, comes back to find an orphan and a duplicate beside its containers: it
removes both and keeps its own. A container ``docker kill``ed comes back and rejoins,
and its share is processed again, exactly. ``headwater kill`` removes the containers.
Every container and the network the test made go at its end, whatever happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from headwater.cloud.master._docker import CLUSTER, CONTAINER, REVISION, TOPOLOGY, listed

from .._ports import free_port
from ._daemons import Daemons
from ._support import TOPOLOGIES, wait_for

pytestmark = pytest.mark.compose
IMAGE = os.environ.get("HEADWATER_IMAGE", "headwater:latest")
FILE = TOPOLOGIES / "docker_count.py"
NAME = "dockercount"
N, CPU, RAM = 600, 0.5, 512 << 20
STARTUP_S = 180  # two containers at half a CPU each on a shared two-core machine


@pytest.fixture
def network(tmp_path: Path) -> Iterator[tuple[Any, Any, str]]:
    """A Docker network of this test's own: (client, network, gateway IP). At the end every
    container of the master's cluster (and any other on the network) goes, then the network."""
    client = docker.from_env()
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"no image {IMAGE} on this Docker Engine: build it with deploy/compose/build")
    net = client.networks.create(
        f"hw-test-{uuid.uuid4().hex[:8]}", driver="bridge", labels={"io.headwater.test": "1"}
    )
    try:
        net.reload()
        yield client, net, net.attrs["IPAM"]["Config"][0]["Gateway"]
    finally:
        cluster = tmp_path / "master" / "cluster-id"
        doomed = list(_ours(client, cluster.read_text().strip())) if cluster.exists() else []
        net.reload()
        doomed += [c for c in net.containers if c.id not in {d.id for d in doomed}]
        for c in doomed:
            c.remove(force=True, v=True)
        net.remove()


def _ours(client: Any, cluster: str) -> list[Any]:
    return listed(client, {"label": f"{CLUSTER}={cluster}"})


def _start_master(daemons: Daemons, net: Any, gateway: str, ports: tuple[int, ...]) -> None:
    grpc, http, join = ports
    ready = daemons.tmp / f"master-{uuid.uuid4().hex[:6]}.json"
    daemons._spawn(
        [
            "master",
            "--scheduler",
            "docker",
            "--docker-image",
            IMAGE,
            "--docker-network",
            net.name,
            "--host",
            gateway,
            "--port",
            str(grpc),
            "--http-port",
            str(http),
            "--join-port",
            str(join),
            "--state-dir",
            str(daemons.tmp / "master"),
            "--ready-file",
            str(ready),
            "--no-advertise",
        ],
        "master.log",
    )
    info = wait_for(lambda: ready.exists() and json.loads(ready.read_text()), 30, "the master")
    daemons.grpc, daemons.http = info["grpc"], info["http"]
    daemons.token = (daemons.tmp / "master" / "admin.token").read_text().strip()


def _tasks(daemons: Daemons) -> dict[str, dict[str, Any]]:
    return dict(daemons.api(f"/api/v1/topologies/{NAME}/metrics")["tasks"])


def _total(tasks: dict[str, dict[str, Any]], component: str, name: str) -> int:
    return int(sum(m.get(name, 0) for m in tasks.values() if m["component"] == component))


def _online(daemons: Daemons) -> set[str]:
    return {n["id"] for n in daemons.api("/api/v1/nodes") if n["online"]}


def _dump(client: Any, cluster: Path) -> None:
    if not cluster.exists():
        return
    for c in _ours(client, cluster.read_text().strip()):
        print(f"===== docker logs {c.name} ({c.status}) =====")
        print(c.logs(tail=60).decode(errors="replace"))


@pytest.mark.timeout(900)
def test_docker_scheduler(daemons: Daemons, network: tuple[Any, Any, str], tmp_path: Path) -> None:
    client, net, gateway = network
    ports = (free_port(), free_port(), free_port())
    try:
        _scenario(daemons, client, net, gateway, ports)
    except BaseException:
        _dump(client, tmp_path / "master" / "cluster-id")
        raise


def _scenario(daemons: Daemons, client: Any, net: Any, gateway: str, ports: Any) -> None:
    _start_master(daemons, net, gateway, ports)
    cluster = (daemons.tmp / "master" / "cluster-id").read_text().strip()
    assert "submitted 'dockercount'" in daemons.cli("submit", str(FILE), "--containers", "2")

    # -- one Docker container per cloud container, labelled and limited ----------------
    def two() -> list[Any] | None:
        listed = _ours(client, cluster)
        return listed if len(listed) == 2 else None

    found = wait_for(two, 60, "two Docker containers")
    image_labels = client.images.get(IMAGE).labels or {}
    by_index: dict[int, Any] = {}
    for c in found:
        c.reload()
        index = int(c.labels[CONTAINER])
        by_index[index] = c
        assert c.labels == {
            **image_labels,
            CLUSTER: cluster,
            TOPOLOGY: NAME,
            CONTAINER: str(index),
            REVISION: "1",
        }
        host = c.attrs["HostConfig"]
        assert host["NanoCpus"] == round(CPU * 1e9)
        assert host["Memory"] == RAM
        assert host["RestartPolicy"]["Name"] == "unless-stopped"
        assert c.attrs["Config"]["Hostname"] == c.name
        assert list(c.attrs["NetworkSettings"]["Networks"]) == [net.name]
    assert sorted(by_index) == [0, 1]
    # the worker's folder is an anonymous volume of each container's own
    volumes = [m["Name"] for c in by_index.values() for m in c.attrs["Mounts"]]
    assert [m["Destination"] for c in by_index.values() for m in c.attrs["Mounts"]] == [
        "/var/lib/headwater/worker"
    ] * 2
    names = {i: c.name for i, c in by_index.items()}

    # -- it processes every tuple ---------------------------------------------------------
    def counted(seen: int, total: int) -> bool:
        tasks = _tasks(daemons)
        return (_total(tasks, "tally", "user:seen"), _total(tasks, "tally", "user:sum")) == (
            seen,
            total,
        )

    wait_for(lambda: _online(daemons) == set(names.values()), STARTUP_S, "both nodes attached")
    wait_for(lambda: counted(N, sum(range(N))), STARTUP_S, f"all {N} tuples tallied")
    assert _total(_tasks(daemons), "numbers", "user:emitted") == N

    # -- headwater logs ---------------------------------------------------------------------
    out = daemons.cli("logs", f"{NAME}/1", "--tail", "400")
    assert f"==> {NAME}/1: worker log (Docker container {names[1]}, running) <==" in out
    assert f"started container 1 of '{NAME}'" in out
    assert f"==> {NAME}/1: container log (/var/lib/headwater/worker/{NAME}/container-1/" in out
    both = daemons.cli("logs", NAME, "--tail", "5")
    assert both.count("worker log (Docker container") == 2
    assert daemons.cli("logs", names[0], "--tail", "5").startswith(f"==> {NAME}/0: worker log")

    # -- the master SIGKILLed; an orphan and a duplicate appear while it is away ---------
    ids = {c.id for c in by_index.values()}
    master = daemons.procs[0]
    master.kill()
    master.wait(10)
    sleeper = ["sleep", "3600"]
    orphan = client.containers.run(
        IMAGE, sleeper, name=f"hw-orphan-{cluster}", detach=True, network=net.name,
        labels={CLUSTER: cluster, TOPOLOGY: "gone", CONTAINER: "0", REVISION: "1"},
    )  # fmt: skip
    duplicate = client.containers.run(
        IMAGE, sleeper, name=f"hw-dup-{cluster}", detach=True, network=net.name,
        labels={CLUSTER: cluster, TOPOLOGY: NAME, CONTAINER: "0", REVISION: "1"},
    )  # fmt: skip
    _start_master(daemons, net, gateway, ports)
    wait_for(
        lambda: {c.id for c in _ours(client, cluster)} == ids, 60, "the orphan and duplicate gone"
    )
    for extra in (orphan, duplicate):
        with pytest.raises(docker.errors.NotFound):
            extra.reload()
    wait_for(lambda: _online(daemons) == set(names.values()), 60, "both nodes attached again")
    wait_for(lambda: counted(N, sum(range(N))), 60, "the tallies reported to the new master")

    # -- a container docker-killed comes back and rejoins; its share runs again -----------
    victim = by_index[1]
    victim.reload()
    started = victim.attrs["State"]["StartedAt"]
    tasks = _tasks(daemons)
    kept = [m for m in tasks.values() if m["component"] == "tally" and m["container"] != 1]
    kept_seen = int(sum(m.get("user:seen", 0) for m in kept))
    kept_sum = int(sum(m.get("user:sum", 0) for m in kept))
    # the victim's spout tasks emit their shares again: task i of k emits range(i, N, k)
    spouts = sorted(int(t) for t, m in tasks.items() if m["component"] == "numbers")
    again = [
        seq
        for i, t in enumerate(spouts)
        if tasks[str(t)]["container"] == 1
        for seq in range(i, N, len(spouts))
    ]
    assert len(again) == N // 2
    client.api.kill(victim.id)

    def back() -> bool:
        victim.reload()
        return bool(victim.status == "running" and victim.attrs["State"]["StartedAt"] != started)

    wait_for(back, 60, "the killed container running again")
    wait_for(lambda: names[1] in _online(daemons), STARTUP_S, "its node attached again")
    wait_for(
        lambda: counted(kept_seen + len(again), kept_sum + sum(again)),
        STARTUP_S,
        "its spout's share tallied again, exactly",
    )
    assert {c.id for c in _ours(client, cluster)} == ids  # restarted, not replaced

    # -- headwater kill removes them ----------------------------------------------------------
    daemons.cli("kill", NAME)
    wait_for(lambda: _ours(client, cluster) == [], 60, "its containers removed")
    for volume in volumes:  # with their volumes
        with pytest.raises(docker.errors.NotFound):
            client.volumes.get(volume)
    wait_for(lambda: daemons.api("/api/v1/nodes") == [], 30, "their nodes forgotten")


def test_the_master_refuses_an_address_containers_cannot_reach(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "headwater",
            "master",
            "--scheduler",
            "docker",
            "--port",
            str(free_port()),
            "--http-port",
            str(free_port()),
            "--join-port",
            str(free_port()),
            "--state-dir",
            str(tmp_path / "master"),
            "--no-advertise",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot reach the master at '127.0.0.1:" in done.stderr
    assert "--advertise HOST:PORT" in done.stderr
    assert "Traceback" not in done.stderr
