"""Topology code on a node (issue 31, finding 11): the agent never runs a topology's code in
its own process, and a package changed on a node's disk never runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from ._daemons import Daemons
from ._support import wait_for

pytestmark = pytest.mark.cluster
PROBE = Path(__file__).parent / "topologies" / "probe.py"
CONTAINER = "headwater.common.runtime.container"


def _reports(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    # whole lines only: a load may be writing its line while the test reads
    return [json.loads(line) for line in path.read_text().split("\n")[:-1] if line]


def _submit(daemons: Daemons, tmp: Path) -> None:
    folder = tmp / "probe"
    folder.mkdir()
    (folder / "pipeline.py").write_text(PROBE.read_text())
    assert "submitted 'probe'" in daemons.cli("submit", str(folder / "pipeline.py"))


def _online(daemons: Daemons, n: int) -> None:
    wait_for(
        lambda: len([x for x in daemons.api("/api/v1/nodes") if x["online"]]) == n, 30, "online"
    )


def test_an_agent_loads_topology_code_only_in_child_processes(
    daemons: Daemons, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "report.jsonl"
    monkeypatch.setenv("HW_TEST_REPORT", str(report))
    monkeypatch.setenv("HW_TEST_PROBE_EDGE", "1")
    daemons.start_master()
    daemons.start_worker("w1")
    agent = daemons.start_agent("a1", "--master", daemons.grpc, "--label", "site=a")
    _online(daemons, 2)
    _submit(daemons, tmp_path)
    # the edge container loaded it: a process under the agent
    wait_for(
        lambda: any(
            CONTAINER.replace("common.runtime", "edge") in " ".join(p.cmdline())
            for p in agent.children(recursive=True)
        ),
        60,
        "the edge container",
    )
    wait_for(lambda: len(_reports(report)) >= 3, 60, "loads by the master, agent and worker")
    pids = {r["pid"] for r in _reports(report)}
    assert agent.pid not in pids  # the agent itself never imported the file


def test_a_package_changed_on_a_nodes_disk_is_unpacked_again_before_it_runs(
    daemons: Daemons, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "report.jsonl"
    monkeypatch.setenv("HW_TEST_REPORT", str(report))
    daemons.start_master()
    worker = daemons.start_worker("w1")
    _online(daemons, 1)
    _submit(daemons, tmp_path)

    def container() -> psutil.Process | None:
        for p in worker.children(recursive=True):
            try:
                if CONTAINER in " ".join(p.cmdline()):
                    return p
            except psutil.NoSuchProcess:
                continue
        return None

    first = wait_for(container, 60, "the worker's container")
    wait_for(lambda: any(r["pid"] == first.pid for r in _reports(report)), 60, "its load")
    [code] = [p for p in (tmp_path / "w1" / "packages").iterdir() if p.is_dir()]
    original = (code / "pipeline.py").read_bytes()
    assert (code / "pipeline.py").stat().st_mode & 0o777 == 0o444  # sealed
    # what a topology's code (or a careless operator) could do on the node: change the
    # package another topology loads on its next start, and plant byte code beside it
    (code / "pipeline.py").chmod(0o644)
    (code / "pipeline.py").write_bytes(original.replace(b'"original"', b'"tampered"'))
    (code / "__pycache__").mkdir(exist_ok=True)
    (code / "__pycache__" / "pipeline.cpython-311.pyc").write_bytes(b"not byte code")
    first.send_signal(signal.SIGKILL)

    def restarted() -> psutil.Process | None:
        c = container()
        return c if c is not None and c.pid != first.pid else None

    second = wait_for(restarted, 60, "the container restarted")
    wait_for(lambda: any(r["pid"] == second.pid for r in _reports(report)), 60, "its load")
    assert {r["version"] for r in _reports(report)} == {"original"}
    assert (code / "pipeline.py").read_bytes() == original
    assert not (code / "__pycache__").exists()
    log = (tmp_path / "w1.log").read_text()
    assert "differs from its zip (pipeline.py was changed): unpacking it again" in log
    assert os.access(code / "pipeline.py", os.R_OK)


def _group(pid: int, controller: str) -> Path:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return Path("/sys/fs/cgroup") / controller / path.lstrip("/")
    raise AssertionError(f"no {controller} group for {pid}")


def test_a_topologys_processes_share_its_control_groups_and_their_limits(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.start_master()
    worker = daemons.start_worker(
        "w1", more=("--topology-memory", "512MiB", "--topology-processes", "300")
    )
    _online(daemons, 1)
    _submit(daemons, tmp_path)

    def reported() -> dict[str, dict[str, str]] | None:
        found = daemons.api("/api/v1/topologies/probe/metrics")["tasks"]
        return found if len(found) == 2 and all("pid" in m for m in found.values()) else None

    tasks = wait_for(reported, 60, "2 tasks with their pids")
    pids = [int(m["pid"]) for m in tasks.values()]
    pids += [p.pid for p in worker.children() if CONTAINER in " ".join(p.cmdline())]
    assert len(pids) == 3  # two instances and their container
    memory = {_group(pid, "memory") for pid in pids}
    processes = {_group(pid, "pids") for pid in pids}
    assert len(memory) == len(processes) == 1  # one group each, for all three
    [mem], [procs] = memory, processes
    assert mem.parts[-2][: len("headwater-w1-")] == "headwater-w1-" and mem.name == "t-probe"
    assert int((mem / "memory.limit_in_bytes").read_text()) == 512 << 20
    assert (procs / "pids.max").read_text().strip() == "300"
    assert _group(worker.pid, "memory") == mem.parent.parent  # the worker itself is outside

    # what a topology's code can leave behind: a process in a session of its own (its group
    # is its parent's, so it is in the topology's)
    left = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        for group in (mem, procs):
            (group / "cgroup.procs").write_text(str(left.pid))
        daemons.cli("kill", "probe")
        wait_for(lambda: not mem.exists() and not procs.exists(), 30, "its groups removed")
        assert left.wait(10) == -signal.SIGKILL  # killed with its topology
    finally:
        left.kill()
        left.wait()
