"""deploy/compose/docker-compose.ha.yml (issue 38): the cluster on a 3-server ZooKeeper
ensemble, with two masters and an S3 store (Garage), and the readings of both sites counted
exactly once in the cloud's windows and landing zone through each fault: the leading master
SIGKILLed (the standby leads within 10 s; no topology, node, token or revision lost), the
leader cut off from ZooKeeper (it steps down; every node obeys the new leader's epoch), and
a worker removed with its disk (its container restarts on the other worker from the
shared checkpoint store).

The rounds run in this order on one cluster, its ports on the host's loopback only, with
no Spark (the rollups are test_compose.py's)."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from .._workers import DEFAULT_PORTS
from ..conftest import show_on_failure
from ._compose import EXEC_POLL, ComposeCluster, build_image, compose_cluster
from ._compose_rounds import SITES, docker, fault_round
from ._support import wait_for

# one compose cluster at a time on this machine: beside test_compose.py's, on its worker
pytestmark = [pytest.mark.compose, pytest.mark.timeout(1500), DEFAULT_PORTS]
FILES = ("docker-compose.yml", "docker-compose.ha.yml")
SERVICES = (
    *("zk1", "zk2", "zk3", "s3", "init-state", "master", "master-2", "init", "mosquitto"),
    *("worker", "agent-site0", "agent-site1", "sensors-site0", "sensors-site1"),
)
MASTERS = ("master", "master-2")
FAILOVER_S = 10.0  # the bound: a standby leads within it
_MADE = "the edit was made against revision"  # a stale base: the edit was made already

# run in a master's container, {token} filled in: what it says of the leader
ROLE = """
import json, urllib.error, urllib.request
req = urllib.request.Request(
    "http://127.0.0.1:7071/api/v1/leader", headers={{"Authorization": "Bearer {token}"}}
)
try:
    print(urllib.request.urlopen(req, timeout=5).read().decode())
except (urllib.error.URLError, OSError) as exc:
    print(json.dumps({{"role": "down", "why": str(exc)}}))
"""
# run in the leader's container: the records that must outlive a failover
RECORDS = """
import json, urllib.request
def get(path):
    req = urllib.request.Request(
        "http://127.0.0.1:7071" + path, headers={{"Authorization": "Bearer {token}"}}
    )
    return json.load(urllib.request.urlopen(req, timeout=10))
print(json.dumps({{
    "topologies": sorted(t["name"] for t in get("/api/v1/topologies")),
    "revisions": [r["revision"] for r in get("/api/v1/topologies/iot/revisions")["revisions"]],
    "tokens": sorted(t["id"] for t in get("/api/v1/tokens")),
    "nodes": sorted((n["id"], n["online"]) for n in get("/api/v1/nodes")),
}}))
"""
# run in a master's container: what its REST API answers to GET {path}
GET = """
import urllib.request
req = urllib.request.Request(
    "http://127.0.0.1:7071{path}", headers={{"Authorization": "Bearer {token}"}}
)
print(urllib.request.urlopen(req, timeout=10).read().decode())
"""
# run in a worker's container, {token} filled in: the IoT example's containers by worker host
PLACED = """
import json, urllib.request
req = urllib.request.Request(
    "http://master:7071/api/v1/nodes", headers={{"Authorization": "Bearer {token}"}}
)
nodes = json.load(urllib.request.urlopen(req, timeout=10))
print(json.dumps({{n["hostname"]: sorted(n["containers"]) for n in nodes
                  if n["kind"] == "worker" and n["online"]}}))
"""
EPOCH = """
import json, pathlib
print(json.dumps(int(pathlib.Path("{workdir}/leader-epoch").read_text() or 0)))
"""


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[ComposeCluster]:
    image = build_image()
    assert image.startswith("headwater:")
    env = {"HEADWATER_SENSOR_RATE": "5", "HEADWATER_API2_PUBLISH": "127.0.0.1:"}
    with compose_cluster(f"hwha{os.getpid()}", env, FILES, SERVICES, reader="worker") as c:
        show_on_failure(
            request.node, "compose logs", lambda: c.run("logs", "--no-color", "--tail", "60").stdout
        )
        yield c


def _exec(container: str, code: str) -> Any:
    """``code`` run in ``container``: what it printed, as JSON; None where it could not run
    (a container restarting or gone)."""
    done = subprocess.run(
        ["docker", "exec", container, "python3", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


_TOKENS: dict[str, str] = {}


def _token(cluster: ComposeCluster) -> str:
    """The admin token the master that led first made, in its volume."""
    if cluster.project not in _TOKENS:
        for m in MASTERS:
            got = _exec(
                cluster.container(m),
                "import json, pathlib; p = pathlib.Path('/var/lib/headwater/master/admin.token');"
                "print(json.dumps(p.read_text().strip() if p.exists() else ''))",
            )
            if got:
                _TOKENS[cluster.project] = got
                break
    return _TOKENS[cluster.project]


def _said(cluster: ComposeCluster, master: str) -> dict[str, Any]:
    said = _exec(cluster.container(master), ROLE.format(token=_token(cluster)))
    return said if isinstance(said, dict) else {"role": "down"}


def _leader(cluster: ComposeCluster) -> tuple[str, str, int]:
    """``(the leader, the other master, the leader's epoch)``, once one leads."""
    got: dict[str, Any] = {}

    def one_leads() -> bool:
        for m in MASTERS:
            said = _said(cluster, m)
            if said.get("role") == "leader":
                got.update(said, name=m)
                return True
        return False

    wait_for(one_leads, 120, "a master to lead", interval=EXEC_POLL)
    name = str(got["name"])
    return name, next(m for m in MASTERS if m != name), int(got["epoch"])


def _serving_since(container: str, since: float) -> float:
    """When the master in ``container`` last said it serves as the leader (its ``master:
    gRPC ..., API ...`` line), as a Unix time, from its log since ``since``: the moment it
    led, without the test's polling in it (the containers share this host's clock)."""
    done = subprocess.run(
        ["docker", "logs", "--since", f"{since:.3f}", container],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    stamps = [
        line.split(" ", 1)[0].removeprefix("ts=")
        for line in (done.stdout + done.stderr).splitlines()
        if 'msg="master: gRPC ' in line and line.startswith("ts=")
    ]
    assert stamps, f"no serving line in {container}'s log since the fault"
    when = datetime.datetime.strptime(stamps[-1], "%Y-%m-%dT%H:%M:%S.%fZ")
    return when.replace(tzinfo=datetime.UTC).timestamp()


def _records(cluster: ComposeCluster) -> dict[str, Any]:
    leader, _, _ = _leader(cluster)
    got: dict[str, Any] = _exec(cluster.container(leader), RECORDS.format(token=_token(cluster)))
    return got


def _epochs(cluster: ComposeCluster) -> dict[str, int]:
    """The leader epoch each node obeyed last (its workdir's ``leader-epoch``)."""
    out = {}
    for site in SITES:
        out[site] = _exec(
            cluster.container(f"agent-{site}"), EPOCH.format(workdir="/var/lib/headwater/agent")
        )
    for c in cluster.containers("worker"):
        host = docker("inspect", "-f", "{{.Config.Hostname}}", c).strip()
        out[host] = _exec(c, EPOCH.format(workdir=f"/var/lib/headwater/worker/{host}"))
    return out


def _all_attached(cluster: ComposeCluster, before: dict[str, Any]) -> bool:
    """Every node of ``before`` online again, at the leader."""
    now = _records(cluster)
    return bool(now and {n for n, _ in now["nodes"]} >= {n for n, up in before["nodes"] if up})


def _edit_until_taken(cluster: ComposeCluster, base: int) -> list[str]:
    """``headwater replace iot --parallelism windows=2 --base BASE`` from a worker's
    container (its ``HEADWATER_MASTER`` names the first master), again each second until a
    master took it or said it was made already (a stale base): what each try printed."""
    said: list[str] = []

    def once() -> bool:
        done = subprocess.run(
            [
                *("docker", "exec", "-e", f"HEADWATER_TOKEN={_token(cluster)}"),
                *(cluster.pinned("worker"), "headwater", "replace", "iot"),
                *("--parallelism", "windows=2", "--base", str(base), "--no-wait"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        said.append(f"{done.returncode}: {(done.stdout + done.stderr).strip()[-300:]}")
        return done.returncode == 0 or _MADE in done.stderr

    wait_for(once, 120, "the edit taken by a master", interval=1)
    return said


def _revisions(cluster: ComposeCluster) -> list[dict[str, Any]]:
    """The IoT example's revisions, as the leader lists them."""
    leader, _, _ = _leader(cluster)
    got = _exec(
        cluster.container(leader),
        GET.format(path="/api/v1/topologies/iot/revisions", token=_token(cluster)),
    )
    return list(got["revisions"])


def test_the_leader_killed_a_standby_leads_within_10_s_and_nothing_is_lost(
    cluster: ComposeCluster,
) -> None:
    before = _records(cluster)
    assert before["topologies"] == ["iot"], before
    base = before["revisions"][-1]
    took: dict[str, float] = {}
    edits: list[str] = []

    def kill() -> None:
        old, new, _ = _leader(cluster)
        pid = int(docker("inspect", "-f", "{{.State.Pid}}", cluster.container(old)))
        killed = time.time()
        os.kill(pid, signal.SIGKILL)  # a crash: its restart policy starts it again
        # meanwhile a live edit, tried while no master leads: refused until one does
        editing = threading.Thread(target=lambda: edits.extend(_edit_until_taken(cluster, base)))
        editing.start()
        wait_for(
            lambda: _said(cluster, new).get("role") == "leader",
            60,
            f"{new} to lead",
            interval=EXEC_POLL,
        )
        took["failover_s"] = _serving_since(cluster.container(new), killed) - killed
        editing.join(180)
        # taken (or, its answer lost, refused as made already): the revisions say how often
        assert edits and (edits[-1].startswith("0: ") or _MADE in edits[-1]), edits
        wait_for(
            lambda: _said(cluster, old).get("role") == "standby",
            120,
            f"{old} standing by",
            interval=EXEC_POLL,
        )
        wait_for(
            lambda: _revisions(cluster)[-1]["status"] == "applied",
            120,
            "the edit applied",
            interval=EXEC_POLL,
        )

    fault_round(cluster, kill, rollups=False)
    print(f"the standby led {took['failover_s']:.1f} s after the leader was killed")
    print("the edit's tries:\n" + "\n".join(edits))
    assert took["failover_s"] < FAILOVER_S, took
    wait_for(
        lambda: _all_attached(cluster, before),
        60,
        "every node attached to the new leader",
        interval=EXEC_POLL,
    )
    # the standby's health check follows its redirect to the leader (init waits on `master`,
    # which may be the standby)
    health = "{{.State.Health.Status}}"
    wait_for(
        lambda: (
            {docker("inspect", "-f", health, cluster.container(m)).strip() for m in MASTERS}
            == {"healthy"}
        ),
        60,
        "both masters healthy, the standby through the leader",
    )
    after = _records(cluster)
    assert {k: after[k] for k in ("topologies", "tokens")} == {
        k: before[k] for k in ("topologies", "tokens")
    }
    # every revision kept, and the edit made exactly once
    assert after["revisions"] == [*before["revisions"], base + 1], edits
    [made] = [r for r in _revisions(cluster) if r["revision"] == base + 1]
    assert made["status"] == "applied", made


def test_the_leader_cut_off_from_zookeeper_steps_down_and_every_node_obeys_the_next(
    cluster: ComposeCluster,
) -> None:
    before = _records(cluster)
    network = f"{cluster.project}_state"
    seen: dict[str, float] = {}

    def cut() -> None:
        old, new, epoch = _leader(cluster)
        container = cluster.container(old)
        cut_at = time.time()
        docker("network", "disconnect", network, container)
        try:
            wait_for(
                lambda: _said(cluster, new).get("role") == "leader",
                60,
                f"{new} to lead",
                interval=EXEC_POLL,
            )
            seen["failover_s"] = _serving_since(cluster.container(new), cut_at) - cut_at
            seen["epoch"] = int(_said(cluster, new)["epoch"])
            assert seen["epoch"] > epoch
        finally:
            docker("network", "connect", network, container)
        wait_for(
            lambda: _said(cluster, old).get("role") == "standby",
            180,
            f"{old} standing by",
            interval=EXEC_POLL,
        )

    fault_round(cluster, cut, rollups=False)
    print(f"the standby led {seen['failover_s']:.1f} s after the leader was cut off")
    wait_for(
        lambda: _all_attached(cluster, before),
        60,
        "every node attached to the new leader",
        interval=EXEC_POLL,
    )
    after = _records(cluster)
    assert {k: after[k] for k in ("topologies", "revisions", "tokens")} == {
        k: before[k] for k in ("topologies", "revisions", "tokens")
    }
    # no node took an order of the deposed leader's after it obeyed the new one's
    assert set(_epochs(cluster).values()) == {int(seen["epoch"])}, _epochs(cluster)


def test_a_worker_removed_with_its_disk_has_its_container_restored_from_the_shared_store(
    cluster: ComposeCluster,
) -> None:
    keep = cluster.pinned("worker")  # the rounds read the landing zone through it
    [gone] = [c for c in cluster.containers("worker") if c != keep]
    host = docker("inspect", "-f", "{{.Config.Hostname}}", gone).strip()
    kept_host = docker("inspect", "-f", "{{.Config.Hostname}}", keep).strip()
    placed = _exec(keep, PLACED.format(token=_token(cluster)))
    assert sorted(placed) == sorted([host, kept_host]) and all(placed.values()), placed

    def remove() -> None:
        docker("rm", "-f", gone)
        docker("exec", "-u", "root", keep, "rm", "-rf", f"/var/lib/headwater/worker/{host}")

    fault_round(cluster, remove, rollups=False)
    now = _exec(keep, PLACED.format(token=_token(cluster)))
    assert now == {kept_host: ["iot/0", "iot/1"]}, now
