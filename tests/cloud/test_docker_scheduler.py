"""The Docker scheduler's reconciler against a fake Docker Engine (cloud/master/_docker.py).

A real master (its state folder the test's own, real packages submitted and loaded
in child processes) with ``DockerScheduler`` over ``FakeDocker``: an in-memory
engine with the parts of the Docker SDK the scheduler uses. Each test runs
reconciling passes by hand and asserts exactly which containers exist, with which
labels, limits and command. The real engine is driven by
tests/integration/test_docker_scheduler.py.
"""

from __future__ import annotations

import asyncio
import builtins
import re
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from headwater.cloud.master._docker import (
    CLUSTER,
    CONTAINER,
    REVISION,
    TOPOLOGY,
    WORKDIR,
    DockerOptions,
    DockerScheduler,
    cluster_id,
    container_name,
    listed,
    open_scheduler,
)
from headwater.cloud.master._enrolment import Enrolment
from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master
from headwater.cloud.master._nodes import NodeRecord
from headwater.common._exceptions import HeadwaterError
from headwater.common.security import JoinToken
from headwater.common.wire.proto import runtime_pb2 as pb

from ._packages import topology_package

LIMITS = {"headwater.container.cpu": 0.5, "headwater.container.ram.bytes": 256 << 20}


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class FakeAPIError(Exception):
    """As docker.errors.APIError: the HTTP status is in ``response.status_code``."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.response = _Response(status)


class FakeContainer:
    def __init__(self, engine: FakeDocker, name: str, labels: dict[str, str], **spec: Any):
        self.engine, self.name, self.labels, self.spec = engine, name, labels, spec
        self.state = "running"
        self.log = b"".join(b"worker line %d\n" % i for i in range(5))

    @property
    def status(self) -> str:
        return self.state

    @property
    def attrs(self) -> dict[str, Any]:
        return {"State": {"Status": self.state}}

    def start(self) -> None:
        self.state = "running"
        self.engine.started.append(self.name)

    def remove(self, force: bool = False, v: bool = False) -> None:
        assert force and v, "the scheduler removes by force, with the container's volume"
        if self.name not in self.engine.by_name:
            raise FakeAPIError(404, "no such container")
        del self.engine.by_name[self.name]
        self.engine.removed.append(self.name)

    def logs(self, tail: int) -> bytes:
        return b"".join(self.log.splitlines(keepends=True)[-tail:])

    def exec_run(self, cmd: list[str], demux: bool = False) -> tuple[int, bytes]:
        assert cmd[:2] == ["tail", "-n"]
        self.engine.execs.append(cmd)
        return 0, b"container line\n"


class _Containers:
    def __init__(self, engine: FakeDocker) -> None:
        self.engine = engine

    def list(self, all: bool = False, filters: dict[str, str] | None = None) -> builtins.list[Any]:
        assert all, "stopped containers count too"
        out = list(self.engine.by_name.values())
        for key, value in (filters or {}).items():
            if key == "label":
                k, _, v = value.partition("=")
                out = [c for c in out if c.labels.get(k) == v]
            elif key == "name":
                out = [c for c in out if value in c.name]
        return out

    def run(
        self, image: str, command: builtins.list[str], *, name: str, **spec: Any
    ) -> FakeContainer:
        if self.engine.refuse:
            raise FakeAPIError(500, self.engine.refuse)
        if name in self.engine.by_name:
            raise FakeAPIError(409, f"the name {name} is in use")
        c = FakeContainer(self.engine, name, dict(spec.pop("labels")), image=image, **spec)
        c.spec["command"] = command
        self.engine.by_name[name] = c
        self.engine.created.append(name)
        return c


class _Named:
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.made: list[tuple[str, dict[str, Any]]] = []

    def get(self, name: str) -> str:
        if name not in self.names:
            raise FakeAPIError(404, f"no {name}")
        return name

    def create(self, name: str, **spec: Any) -> str:
        self.names.add(name)
        self.made.append((name, spec))
        return name


class FakeDocker:
    """The parts of ``docker.DockerClient`` the scheduler uses, in memory."""

    def __init__(self) -> None:
        self.by_name: dict[str, FakeContainer] = {}
        self.containers = _Containers(self)
        self.created: list[str] = []
        self.removed: list[str] = []
        self.started: list[str] = []
        self.execs: list[list[str]] = []
        self.refuse = ""
        self.images = _Named({"headwater:latest"})
        self.networks = _Named({"hw-test"})

    def info(self) -> dict[str, Any]:
        return {"NCPU": 2, "MemTotal": 4 << 30}

    def add(self, name: str, labels: dict[str, str], state: str = "running") -> FakeContainer:
        c = FakeContainer(self, name, labels)
        c.state = state
        self.by_name[name] = c
        return c


def _package(tmp_path: Path, name: str, config: dict[str, Any]) -> bytes:
    return topology_package(tmp_path, name, parallelism=2, config=config)


def _master(state: Path, engine: FakeDocker, secure: bool = True) -> Master:
    master = Master(state)
    if secure:
        master.nodes.enrolment = Enrolment(state / "tls", master.tokens)
        master.join_port = 7072
        master.ca_fingerprint = master.nodes.enrolment.ca.fingerprint
    options = DockerOptions("headwater:latest", "hw-test", "172.30.0.1:7070")
    master.scheduler = open_scheduler(master, options, "127.0.0.1:7070", engine)
    return master


def _docker(master: Master) -> DockerScheduler:
    assert isinstance(master.scheduler, DockerScheduler)
    return master.scheduler


def _run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body())


def test_each_cloud_container_gets_a_docker_container_with_labels_limits_and_a_join_token(
    tmp_path: Path,
) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 2)
        docker = _docker(master)
        result = await docker.reconcile()
        cluster = (tmp_path / "state" / "cluster-id").read_text().strip()
        names = [container_name(cluster, "wc", c) for c in (0, 1)]
        assert result is not None and result.created == names
        assert sorted(engine.by_name) == names
        assert master.deployments["wc"].assignment == {0: names[0], 1: names[1]}
        for c, name in enumerate(names):
            spec = engine.by_name[name].spec
            assert engine.by_name[name].labels == {
                CLUSTER: cluster,
                TOPOLOGY: "wc",
                CONTAINER: str(c),
                REVISION: "1",
            }
            assert spec["nano_cpus"] == 500_000_000
            assert spec["mem_limit"] == 256 << 20
            assert spec["restart_policy"] == {"Name": "unless-stopped"}
            assert spec["network"] == "hw-test"
            assert spec["hostname"] == name
            assert spec["image"] == "headwater:latest"
            assert spec["mounts"] == [{"Target": WORKDIR, "Type": "volume", "ReadOnly": False}]
            command = spec["command"]
            assert command[:-2] == [
                "headwater",
                "worker",
                "--master",
                "172.30.0.1:7070",
                "--id",
                name,
                "--workdir",
                WORKDIR,
                "--host",
                name,
            ]
            assert command[-2] == "--join"
            token = JoinToken.parse(command[-1])
            assert token.port == 7072
            record = master.tokens.check(token.token)
            assert record is not None and record.role == "worker" and record.expires is not None
        # a second pass finds everything as it should be
        again = await docker.reconcile()
        assert again is not None and (again.created, again.started, again.removed) == ([], [], [])

    _run(scenario)


def test_orphans_duplicates_and_foreign_labels_are_removed_and_a_stopped_one_started(
    tmp_path: Path,
) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 2)
        docker = _docker(master)
        await docker.reconcile()
        cluster = docker.cluster
        first, second = (container_name(cluster, "wc", c) for c in (0, 1))
        mine = {CLUSTER: cluster, TOPOLOGY: "wc", REVISION: "1"}
        engine.add("dup-of-0", {**mine, CONTAINER: "0"})
        engine.add("past-the-end", {**mine, CONTAINER: "2"})
        engine.add("killed-topology", {**mine, TOPOLOGY: "gone", CONTAINER: "0"})
        engine.add("no-index", {CLUSTER: cluster, TOPOLOGY: "wc", CONTAINER: "x"})
        engine.add("other-cluster", {**mine, CLUSTER: "0123456789ab", CONTAINER: "0"})
        engine.add("not-ours", {})
        engine.by_name[second].state = "exited"  # docker kill
        result = await docker.reconcile()
        assert result is not None
        assert sorted(result.removed) == ["dup-of-0", "killed-topology", "no-index", "past-the-end"]
        assert result.started == [second] and result.created == []
        assert sorted(engine.by_name) == sorted([first, second, "not-ours", "other-cluster"])
        assert engine.by_name[second].state == "running"

    _run(scenario)


def test_kill_removes_the_containers_and_forgets_their_nodes(tmp_path: Path) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 2)
        await master.submit(_package(tmp_path, "other", {}), "topo.py", 1)
        docker = _docker(master)
        await docker.reconcile()
        names = [container_name(docker.cluster, "wc", c) for c in (0, 1)]
        kept = container_name(docker.cluster, "other", 0)
        for name in names:  # the nodes attached once, and went with their containers
            master.nodes.records[name] = NodeRecord(pb.NodeInfo(node_id=name, kind="worker"))
        master.kill("wc")
        result = await docker.reconcile()
        assert result is not None and sorted(result.removed) == names
        assert sorted(engine.by_name) == [kept]
        assert engine.by_name[kept].spec["nano_cpus"] == 1_000_000_000  # the defaults
        assert engine.by_name[kept].spec["mem_limit"] == 1 << 30
        assert sorted(master.nodes.records) == []

    _run(scenario)


def test_a_topology_killed_and_submitted_again_gets_new_containers(tmp_path: Path) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 1)
        docker = _docker(master)
        await docker.reconcile()
        name = container_name(docker.cluster, "wc", 0)
        master.kill("wc")
        await master.submit(_package(tmp_path, "wc", {}), "topo.py", 1)
        result = await docker.reconcile()
        assert result is not None and (result.removed, result.created) == ([name], [name])
        assert engine.by_name[name].spec["mem_limit"] == 1 << 30  # the new submission's

    _run(scenario)


def test_a_restarted_master_adopts_what_runs_and_starts_what_is_missing(tmp_path: Path) -> None:
    engine = FakeDocker()
    state = tmp_path / "state"

    async def first_life() -> None:
        master = _master(state, engine)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 2)
        await _docker(master).reconcile()

    async def second_life() -> None:
        master = _master(state, engine)
        await master.resume()
        docker = _docker(master)
        task = asyncio.get_running_loop().create_task(docker.run())
        try:
            while len(engine.created) < 3:
                await asyncio.sleep(0.01)
        finally:
            task.cancel()

    _run(first_life)
    cluster = cluster_id(state)
    names = [container_name(cluster, "wc", c) for c in (0, 1)]
    assert engine.created == names
    del engine.by_name[names[1]]  # lost while the master was down
    engine.add("orphan", {CLUSTER: cluster, TOPOLOGY: "gone", CONTAINER: "0"})
    _run(second_life)
    assert engine.created == [*names, names[1]]
    assert engine.removed == ["orphan"]
    assert sorted(engine.by_name) == names


def test_join_tokens_are_revoked_once_their_node_attached(tmp_path: Path) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 1)
        docker = _docker(master)
        await docker.reconcile()
        name = container_name(docker.cluster, "wc", 0)
        token = JoinToken.parse(engine.by_name[name].spec["command"][-1])
        assert master.tokens.check(token.token) is not None
        master.nodes.records[name] = NodeRecord(
            pb.NodeInfo(node_id=name, kind="worker"), asyncio.Queue()
        )
        await docker.reconcile()
        assert master.tokens.check(token.token) is None

    _run(scenario)


def test_an_insecure_master_starts_insecure_workers(tmp_path: Path) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine, secure=False)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 1)
        await _docker(master).reconcile()
        (container,) = engine.by_name.values()
        assert container.spec["command"][-1] == "--insecure"

    _run(scenario)


def test_an_engine_refusal_is_logged_once_and_tried_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine)
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 1)
        docker = _docker(master)
        engine.refuse = "Range of CPUs is from 0.01 to 2.00"
        for _ in range(3):
            result = await docker.reconcile()
            assert result is not None and result.created == []
        engine.refuse = ""
        result = await docker.reconcile()
        assert result is not None and len(result.created) == 1

    _run(scenario)
    refusals = [r for r in caplog.records if "cannot create Docker container" in r.message]
    assert len(refusals) == 1 and "Range of CPUs" in refusals[0].message


def test_limits_the_host_cannot_give_are_refused_at_submit(tmp_path: Path) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine)
        with pytest.raises(HeadwaterError, match=r"asks 4 CPUs .* the Docker host has 2"):
            await master.submit(
                _package(tmp_path, "big", {"headwater.container.cpu": 4}), "topo.py", 1
            )
        with pytest.raises(HeadwaterError, match="bytes of memory per container"):
            await master.submit(
                _package(tmp_path, "fat", {"headwater.container.ram.bytes": 8 << 30}),
                "topo.py",
                1,
            )
        assert master.deployments == {}

    _run(scenario)


@pytest.mark.parametrize(
    "topology",
    ["wc", "Word.Count_v2", "x" * 64, "-lead", "a" * 63 + "b", "a" * 63 + "c", "UPPER"],
)
def test_container_names_are_dns_labels_and_distinct(topology: str) -> None:
    names = {container_name("0123456789ab", topology, c) for c in (0, 1, 255)}
    assert len(names) == 3
    for name in names:
        assert re.fullmatch(r"hw-01234567-[a-z0-9-]+-[0-9]+", name) and len(name) <= 63, name
    assert container_name("0123456789ab", "wc", 0) == "hw-01234567-wc-0"
    assert container_name("c", "a" * 63 + "b", 0) != container_name("c", "a" * 63 + "c", 0)
    assert container_name("c", "Wc", 0) != container_name("c", "wc", 0)


def test_open_scheduler_says_what_to_fix(tmp_path: Path) -> None:
    engine = FakeDocker()
    master = Master(tmp_path / "state")
    client = engine
    for address in ("127.0.0.1:7070", "0.0.0.0:7070", "localhost:7070"):
        with pytest.raises(HeadwaterError, match="cannot reach the master"):
            open_scheduler(master, DockerOptions(), address, client)
    with pytest.raises(HeadwaterError, match=r"--docker-image 'nope:1' is not on this"):
        open_scheduler(master, DockerOptions(image="nope:1"), "10.0.0.1:7070", client)
    scheduler = open_scheduler(master, DockerOptions(network="fresh"), "10.0.0.1:7070", client)
    assert engine.networks.made == [
        ("fresh", {"driver": "bridge", "labels": {CLUSTER: scheduler.cluster}})
    ]
    assert scheduler.advertise == "10.0.0.1:7070"
    assert cluster_id(tmp_path / "state") == scheduler.cluster  # kept


# -- logs over the REST API ------------------------------------------------------------
Call = Callable[[TestClient[Any, Any], Master], Awaitable[None]]


def _api(tmp_path: Path, body: Call, docker: bool = True) -> None:
    engine = FakeDocker()

    async def scenario() -> None:
        master = _master(tmp_path / "state", engine) if docker else Master(tmp_path / "state")
        await master.submit(_package(tmp_path, "wc", LIMITS), "topo.py", 2)
        if docker:
            await _docker(master).reconcile()
        admin = (tmp_path / "state" / "admin.token").read_text().strip()
        client = TestClient(
            TestServer(make_app(master)), headers={"Authorization": f"Bearer {admin}"}
        )
        await client.start_server()
        try:
            await body(client, master)
        finally:
            await client.close()

    _run(scenario)


def test_logs_of_a_docker_container_a_topology_and_a_node(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        r = await client.get("/api/v1/topologies/wc/containers/1/logs?tail=2")
        assert r.status == 200
        view = await r.json()
        name = master.deployments["wc"].assignment[1]
        assert view == {
            "topology": "wc",
            "container": 1,
            "docker_container": name,
            "node": name,
            "status": "running",
            "tail": 2,
            "worker_log": "worker line 3\nworker line 4\n",
            "container_log": "container line\n",
            "container_log_path": f"{WORKDIR}/wc/container-1/container.log",
        }
        r = await client.get("/api/v1/topologies/wc/logs")
        views = await r.json()
        assert r.status == 200 and [v["container"] for v in views] == [0, 1]
        assert views[0]["tail"] == 200 and views[0]["worker_log"].count("\n") == 5
        r = await client.get(f"/api/v1/nodes/{name}/logs?tail=1")
        assert r.status == 200 and (await r.json())["container"] == 1

    _api(tmp_path, body)


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/api/v1/topologies/nope/logs", 404, "no topology named 'nope' (running: wc)"),
        ("/api/v1/topologies/nope/containers/0/logs", 404, "no topology named 'nope'"),
        ("/api/v1/topologies/wc/containers/2/logs", 404, "has containers 0 to 1, not 2"),
        ("/api/v1/topologies/wc/containers/x/logs", 404, "containers are numbers"),
        ("/api/v1/topologies/wc/containers/0/logs?tail=0", 400, "from 1 to 10000"),
        ("/api/v1/topologies/wc/containers/0/logs?tail=x", 400, "from 1 to 10000"),
        ("/api/v1/topologies/wc/logs?tail=10001", 400, "from 1 to 10000"),
        ("/api/v1/nodes/nobody/logs", 404, "no node 'nobody'"),
    ],
)
def test_bad_log_requests_say_why(tmp_path: Path, path: str, status: int, says: str) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        r = await client.get(path)
        assert r.status == status
        assert says in (await r.json())["error"]

    _api(tmp_path, body)


def test_logs_of_a_worker_scheduled_topology_without_a_live_worker_say_why(
    tmp_path: Path,
) -> None:
    """The worker scheduler asks the worker (tests/integration/test_worker_logs.py); with none
    attached, or its worker offline, there is no one to ask."""

    async def body(client: TestClient[Any, Any], master: Master) -> None:
        r = await client.get("/api/v1/topologies/wc/containers/0/logs")
        assert r.status == 409
        assert "runs on no node yet" in (await r.json())["error"]
        master.nodes.records["w1"] = NodeRecord(pb.NodeInfo(node_id="w1", kind="worker"))  # offline
        master.deployments["wc"].assignment[0] = "w1"
        r = await client.get("/api/v1/topologies/wc/logs")
        assert r.status == 409 and "'w1', which is offline" in (await r.json())["error"]
        r = await client.get("/api/v1/nodes/w1/logs")
        error = (await r.json())["error"]
        assert r.status == 409 and "where it was started" in error and "runs: wc/0" in error

    _api(tmp_path, body, docker=False)


def test_logs_need_an_operator(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        viewer = master.tokens.create("viewer")
        r = await client.get(
            "/api/v1/topologies/wc/logs", headers={"Authorization": f"Bearer {viewer}"}
        )
        assert r.status == 403 and "needs the operator role" in (await r.json())["error"]

    _api(tmp_path, body)


def test_a_container_gone_between_listing_and_inspection_is_listed_again() -> None:
    """The SDK inspects each container it lists: one removed in between is a 404, and the
    listing is made again instead of failing the pass (or the caller)."""
    engine = FakeDocker()
    engine.add("hw-a", {CLUSTER: "c1"})
    calls = []
    real = engine.containers.list

    def racy(all: bool = False, filters: dict[str, str] | None = None) -> list[Any]:
        calls.append(filters)
        if len(calls) < 3:
            raise FakeAPIError(404, "No such container: 1234")
        return real(all=all, filters=filters)

    engine.containers.list = racy  # type: ignore[method-assign]
    assert [c.name for c in listed(engine, {"label": f"{CLUSTER}=c1"})] == ["hw-a"]
    assert len(calls) == 3

    def refusing(all: bool = False, filters: dict[str, str] | None = None) -> list[Any]:
        raise FakeAPIError(500, "the engine is ill")

    engine.containers.list = refusing  # type: ignore[method-assign]
    with pytest.raises(FakeAPIError):
        listed(engine, {"label": f"{CLUSTER}=c1"})
