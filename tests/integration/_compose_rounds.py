"""The compose tests' rounds (test_compose.py, test_compose_ha.py): sensors publish while a
fault is made, then every reading they published must land exactly once, each closed window
count exactly the readings landed in it, and (where the cluster runs Spark) the rollups
count every one."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections.abc import Callable
from typing import Any

from ._compose import EXEC_POLL, ComposeCluster
from ._support import wait_for

SITES = ("site0", "site1")

# run in a container that mounts the data volume (spark-jobs, a worker): what landed
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


def published_counts(cluster: ComposeCluster) -> dict[str, int]:
    """Per site, the readings its sensors' runs had the broker acknowledge, all told: the sum
    of the next seqs its state keeps (seqs start at 0, and a sensor's seq moves on only once
    the broker acknowledged it). Read from the stopped container's state file, not its log
    (a log the engine cannot read whole drops runs' closing lines); each run must have ended
    on its SIGTERM, not been killed or restarted, or a taken seq may never have been sent."""
    out = {}
    for site in SITES:
        container = cluster.container(f"sensors-{site}")
        code, restarts = docker(
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


def landed(cluster: ComposeCluster) -> dict[str, Any]:
    landed: dict[str, Any] = cluster.python(cluster.reader, LANDED)
    return landed


def settle(
    cluster: ComposeCluster, cond: Callable[[], bool], timeout: float, what: Callable[[], str]
) -> None:
    """``wait_for(cond)``; on a timeout, the failure says what was last seen and where the
    agents and the workers stand."""
    try:
        wait_for(cond, timeout, "", interval=EXEC_POLL)
    except AssertionError:
        agents = {
            site: {
                k: v
                for k, v in agent_status(cluster, site)["metrics"].items()
                if not k.startswith("component:")
            }
            for site in SITES
        }
        workers = cluster.run("logs", "--no-color", "--tail", "30", "worker").stdout
        raise AssertionError(f"{what()}\nagents: {agents}\nworkers:\n{workers}") from None


def fault_round(
    cluster: ComposeCluster, fault: Callable[[], object], rollups: bool = True
) -> dict[str, int]:
    """Sensors publish while ``fault`` runs; once they stop, every reading they published is
    landed exactly once, each closed window counts exactly the readings landed in it, and
    the Spark rollups count every one: the per-site totals."""
    cluster.compose("start", "sensors-site0", "sensors-site1")
    before = sum(landed(cluster)["readings"].values())

    def under_way() -> bool:
        # new readings land, and each site has a closed window landed: the windows close on
        # the readings' event time, so sensors stopped too soon would leave every one open
        now = landed(cluster)
        return bool(
            sum(now["readings"].values()) > before + 60 and now["window_sites"] == list(SITES)
        )

    wait_for(
        under_way,
        240,
        "new readings and both sites' windows landing before the fault",
        interval=EXEC_POLL,
    )
    fault()
    cluster.compose("stop", "--timeout", "20", "sensors-site0", "sensors-site1")
    published = published_counts(cluster)
    last: dict[str, Any] = {}

    def all_landed() -> bool:
        last.update(landed(cluster))
        return bool(last["readings"] == published)

    settle(cluster, all_landed, 300, lambda: f"{published} readings landed (last: {last})")
    assert last["duplicates"] == 0
    assert last["window_sites"] == list(SITES)
    assert last["window_mismatches"] == []
    if not rollups:
        return published

    rolled: dict[str, Any] = {}

    def all_rolled_up() -> bool:
        rolled.update(cluster.python(cluster.reader, ROLLUPS))
        return all(rolled[t] == published for t in ("daily_site", "hourly_site", "daily_sensor"))

    settle(
        cluster, all_rolled_up, 300, lambda: f"the rollups to count {published} (last: {rolled})"
    )
    return published


def docker(*args: str) -> str:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr}"
    return done.stdout


def running(container: str) -> bool:
    return docker("inspect", "-f", "{{.State.Running}}", container).strip() == "true"


def agent_status(cluster: ComposeCluster, site: str) -> dict[str, Any]:
    status: dict[str, Any] = cluster.python(f"agent-{site}", AGENT_STATUS)
    return status
