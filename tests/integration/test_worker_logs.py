"""``headwater logs`` of a worker-scheduled topology: the master asks the worker that runs the
container over its session, and prints what the worker read from its workdir."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from headwater.cloud.local import state_dir
from headwater.cloud.local._logs import end_run, record_run
from headwater.common.plan import load_topology, pack_round_robin
from headwater.common.security import TokenStore

from ._daemons import Daemons
from ._support import EXAMPLES, wait_for

pytestmark = pytest.mark.cluster
WORDCOUNT = EXAMPLES / "iot" / "wordcount.py"


def _get(daemons: Daemons, path: str, token: str) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(
        f"{daemons.http}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _counts(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for f in out.glob("count-*.json"):
        total.update(json.loads(f.read_text()))
    return total


def _section(out: str, header: str) -> list[str]:
    """The lines ``headwater logs`` printed under the header that starts with ``header``."""
    lines = out.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith(header)]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("==> ")), None)
    return lines[start + 1 : end]


def test_logs_of_a_worker_scheduled_container(daemons: Daemons, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    daemons.start_master()
    worker = daemons.start_worker("w1", {"WORDCOUNT_OUTPUT": str(out)})
    wait_for(lambda: [n["online"] for n in daemons.api("/api/v1/nodes")] == [True], 30, "w1")
    daemons.cli("submit", str(WORDCOUNT), "--containers", "1")
    home = tmp_path / "w1" / "wordcount" / "container-0"
    expected = Counter(runpy.run_path(str(WORDCOUNT))["expected_counts"]())
    # every instance connected and the words counted: the container has said all it says
    wait_for(lambda: _counts(out) == expected, 90, "exact word counts")
    log = home / "container.log"
    with log.open("a") as f:  # appended as the container appends: its newest lines
        f.write("".join(f"marker {i}\n" for i in range(8)))

    printed = daemons.cli("logs", "wordcount/0", "--tail", "5")
    header = f"==> wordcount/0: container log on node w1 ({log}) <=="
    assert _section(printed, header) == [f"marker {i}" for i in range(3, 8)]
    assert log.read_text().splitlines()[-5:] == [f"marker {i}" for i in range(3, 8)]
    tasks = sorted(home.glob("task-*.log"), key=lambda p: int(p.stem.partition("-")[2]))
    assert tasks  # its instances run as processes, each with a log
    for task in tasks:
        shown = _section(printed, f"==> wordcount/0: instance log {task.name} ({task}) <==")
        assert shown == task.read_text().splitlines()[-5:]

    whole = daemons.cli("logs", "wordcount", "--tail", "5")  # every container: here, one
    assert _section(whole, header) == [f"marker {i}" for i in range(3, 8)]
    _a_local_run_of_the_same_name(daemons, tmp_path, header)

    viewer = TokenStore(tmp_path / "master" / "tokens.json").create("viewer")
    path = "/api/v1/topologies/wordcount/containers/0/logs?tail=5"
    status, body = _get(daemons, path, viewer)
    assert status == 403 and "needs the operator role" in body["error"]
    status, body = _get(daemons, "/api/v1/topologies/wordcount/containers/3/logs", daemons.token)
    assert status == 404 and "has containers 0 to 0, not 3" in body["error"]
    status, body = _get(daemons, path, daemons.token)
    assert status == 200 and body["container_log"].splitlines()[-5:] == [
        f"marker {i}" for i in range(3, 8)
    ]

    worker.terminate()
    worker.wait(30)
    wait_for(lambda: not daemons.api("/api/v1/nodes")[0]["online"], 30, "w1 offline")
    status, body = _get(daemons, path, daemons.token)
    assert status == 409 and "runs on node 'w1', which is offline" in body["error"]


def _logs_here(daemons: Daemons, *args: str) -> subprocess.CompletedProcess[str]:
    """``headwater logs ARGS`` as a user runs it after `export HEADWATER_MASTER=...`."""
    env = {**os.environ, "HEADWATER_MASTER": daemons.http, "HEADWATER_TOKEN": daemons.token}
    return subprocess.run(
        [sys.executable, "-m", "headwater", "logs", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def _a_local_run_of_the_same_name(daemons: Daemons, tmp_path: Path, header: str) -> None:
    """The docs' order (docs/run.md, then docs/cluster.md): a local run of wordcount, then
    the cluster's: with HEADWATER_MASTER, the cluster's is shown, and said so; --local shows
    the local run's. A name the master does not have is the local run's, and said so."""
    runs = []
    for name in ("wordcount", "localonly"):
        workdir = tmp_path / f"local-{name}"
        workdir.mkdir()
        for log in ("tmaster", "container-0", *(f"task-{t}" for t in range(1, 9))):
            (workdir / f"{log}.log").write_text(f"local {name} {log}\n")
        plan = pack_round_robin(load_topology(WORDCOUNT), 1)
        runs.append((record_run(state_dir(), name, workdir, plan), workdir))
    try:
        done = _logs_here(daemons, "wordcount/0", "--tail", "5")
        assert done.returncode == 0, done.stderr
        assert done.stderr == (
            "headwater logs: logs of the cluster's wordcount (a local run of that name also "
            "exists: --local to see it)\n"
        )
        assert _section(done.stdout, header) == [f"marker {i}" for i in range(3, 8)]
        assert "local wordcount" not in done.stdout

        done = _logs_here(daemons, "wordcount/0", "--tail", "5", "--local")
        assert (done.returncode, done.stderr) == (0, "")
        local = tmp_path / "local-wordcount" / "container-0.log"
        assert _section(done.stdout, f"==> wordcount/0: container log ({local}) <==") == [
            "local wordcount container-0"
        ]
        assert "marker" not in done.stdout

        done = _logs_here(daemons, "wordcount", "--follow")  # only a local run is followed
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr.endswith("; --local --follow follows the local run of that name\n")

        done = _logs_here(daemons, "localonly/tmaster")
        assert done.returncode == 0, done.stderr
        assert done.stderr == (
            f"headwater logs: the master at {daemons.http} has no topology named 'localonly'; "
            "logs of the local run of that name (`headwater run`)\n"
        )
        tmaster = tmp_path / "local-localonly" / "tmaster.log"
        assert done.stdout == (
            f"==> localonly: topology master log ({tmaster}) <==\nlocal localonly tmaster\n"
        )
    finally:
        for path, workdir in runs:
            end_run(path, workdir, logs_kept=False)
