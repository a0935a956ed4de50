"""A topology's code on a node runs as a user of its own (issue 31, finding 11): it cannot
read the node's key or the agent's orders, change a package or the node's workdir, or see
the node's token; on a worker and on an agent, with the nodes' defaults."""

from __future__ import annotations

import json
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import headwater
from headwater.common.node._users import FIRST_UID, LAST_UID, REGISTRY_ENV

from .._workers import one_worker
from ..conftest import show_on_failure
from ._daemons import Daemons
from ._support import wait_for

# as root, as the README runs the tests: it changes user; one test at a time, as each opens
# the folders above this Python to other users while it runs and closes them after (two
# side by side: the first to end closes them under the other, whose topology user then
# cannot start Python)
pytestmark = [pytest.mark.cluster, one_worker(__name__)]
INTRUDER = Path(__file__).parent / "topologies" / "intruder.py"


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A folder other users can pass through, and this Python and headwater readable by them:
    the folders above them that are not (a pyenv under /root) are opened to passing through
    (o+x) while the test runs, as a host that installs Python for every user has them."""
    opened: list[tuple[Path, int]] = []
    for start in (Path(sys.executable).resolve(), Path(headwater.__file__).resolve()):
        for folder in reversed(start.parents):
            mode = folder.stat().st_mode
            if not mode & stat.S_IXOTH:
                opened.append((folder, mode))
                folder.chmod(mode | stat.S_IXOTH)
    root = Path(tempfile.mkdtemp(prefix="hw-isolation-", dir="/tmp"))
    root.chmod(0o711)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        for folder, mode in reversed(opened):
            folder.chmod(stat.S_IMODE(mode))


@pytest.fixture
def cluster(
    request: pytest.FixtureRequest, reachable: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Daemons, Path]]:
    report = reachable / "report"
    report.mkdir()
    report.chmod(0o1777)  # every topology user writes its own
    monkeypatch.setenv(REGISTRY_ENV, str(reachable / "registry" / "users.json"))
    monkeypatch.setenv("HW_TEST_REPORT", str(report))
    d = Daemons(reachable)
    d.isolation = None  # the nodes' defaults
    show_on_failure(request.node, "daemon logs", d.logs)
    try:
        yield d, report
    finally:
        d.stop()


def _submit(daemons: Daemons) -> None:
    folder = daemons.tmp / "code"
    folder.mkdir()
    (folder / "pipeline.py").write_text(INTRUDER.read_text())
    assert "submitted 'intruder'" in daemons.cli("submit", str(folder / "pipeline.py"))


def _facts(report: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted(report.glob("*.json"))]


def _assert_contained(facts: list[dict[str, object]]) -> None:
    uids = {f["uid"] for f in facts}
    assert len(uids) == 1  # one user for the topology, loads and instances alike
    [uid] = uids
    assert isinstance(uid, int) and FIRST_UID < uid <= LAST_UID
    for f in facts:
        assert f["key"] == "PermissionError", f
        assert f["orders"] in ("PermissionError", "FileNotFoundError"), f
        assert f["own_package"] == "PermissionError", f
        assert f["any_package"] == "PermissionError", f
        assert f["workdir"] == "PermissionError", f
        assert f["token"] is False, f


def test_a_workers_topology_runs_as_its_own_user(
    cluster: tuple[Daemons, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    daemons, report = cluster
    daemons.start_master()
    monkeypatch.setenv("HEADWATER_TOKEN", daemons.token)  # an operator's shell, exported
    daemons.start_worker(
        "w1", env={"HW_TEST_NODE": "w1", "HW_TEST_WORKDIR": str(daemons.tmp / "w1")}
    )
    wait_for(lambda: [n for n in daemons.api("/api/v1/nodes") if n["online"]], 30, "online")
    _submit(daemons)
    # the container's load (a child as the topology's user) and both instances' imports and opens
    wait_for(lambda: len([f for f in _facts(report) if f["where"] == "open"]) == 2, 90, "opens")
    facts = _facts(report)
    assert len([f for f in facts if f["where"] == "import"]) >= 3
    _assert_contained(facts)
    w1 = daemons.tmp / "w1"
    assert stat.S_IMODE((w1 / "tls" / "node.key").stat().st_mode) == 0o600
    assert not (w1 / "planted.txt").exists()
    assert "runs as user id" in (daemons.tmp / "w1.log").read_text()


def test_an_agents_edge_topology_runs_as_its_own_user(
    cluster: tuple[Daemons, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    daemons, report = cluster
    monkeypatch.setenv("HW_TEST_PROBE_EDGE", "1")
    daemons.start_master()
    daemons.start_worker("w1", more=("--isolation", "none"))
    monkeypatch.setenv("HW_TEST_NODE", "a1")
    monkeypatch.setenv("HW_TEST_WORKDIR", str(daemons.tmp / "a1"))
    daemons.start_agent("a1", "--master", daemons.grpc, "--label", "site=a", "--isolation", "user")
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2, 30, "online"
    )
    _submit(daemons)
    wait_for(lambda: [f for f in _facts(report) if f["where"] == "open"], 90, "the spout opens")
    facts = _facts(report)
    _assert_contained(facts)
    a1 = daemons.tmp / "a1"
    assert stat.S_IMODE((a1 / "orders.json").stat().st_mode) == 0o600
    assert any(f["orders"] == "PermissionError" for f in facts)  # once it is written


POISONED = Path(__file__).parent / "topologies" / "poisoned_state.py"


def test_a_snapshot_that_would_run_code_is_refused_by_the_node(
    cluster: tuple[Daemons, Path],
) -> None:
    daemons, report = cluster
    daemons.start_master()
    daemons.start_worker("w1")
    wait_for(lambda: [n for n in daemons.api("/api/v1/nodes") if n["online"]], 30, "online")
    folder = daemons.tmp / "code"
    folder.mkdir()
    (folder / "pipeline.py").write_text(POISONED.read_text())
    assert "submitted 'poisoned'" in daemons.cli("submit", str(folder / "pipeline.py"))
    log = daemons.tmp / "w1" / "poisoned" / "container-0" / "container.log"
    refusal = "a snapshot holds a posix.system"
    wait_for(lambda: log.exists() and refusal in log.read_text(), 90, "the container's refusal")
    ran = {p.name: p.read_text().strip() for p in report.glob("ran-*.txt")}
    assert "0" not in ran.values(), ran  # never as root: at most as the topology's own user
