"""The master never runs submitted code itself (issue 15): a child process loads the file.

Each test drives the real app (``make_app``) through aiohttp's test client with a
``Master`` on the test's event loop, as ``test_master_http`` does. A file that sleeps
at its top level is refused after the time limit while the API answers meanwhile; one
that exits, crashes, raises or allocates past the memory limit is refused with the
reason; what it started dies with it; a good file still submits, edits and resumes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master
from headwater.common._package import build_package
from headwater.common.plan._child_loader import LoadLimits

from .._wait import wait_for

_GOOD = """
from headwater import Bolt, Spout, Topology, shuffle


class Words(Spout):
    outputs = ("word",)

    def next_tuple(self):
        pass


class Count(Bolt):
    def process(self, tup):
        pass


topology = (
    Topology("good", config={{"topology.reliability.mode": "EFFECTIVELY_ONCE"}})
    .add_spout("words", Words, parallelism=2)
    .add_bolt("count", Count, inputs={{"words": shuffle()}}, parallelism=3)
)
{tail}
"""

_SLEEPS = """
import os, subprocess, time

child = subprocess.Popen(["sleep", "60"])  # dies with the load, as the load does
with open({marker!r} + ".tmp", "w") as f:
    f.write(f"{{os.getpid()}} {{child.pid}}")
os.replace({marker!r} + ".tmp", {marker!r})
time.sleep(60)
"""

Body = Callable[[TestClient[Any, Any], Master, Path], Awaitable[None]]


def _package(tmp_path: Path, source: str, name: str = "topo") -> bytes:
    folder = tmp_path / f"src-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topo.py").write_text(source)
    return build_package(folder / "topo.py")[0]


def _run(tmp_path: Path, body: Body, limits: LoadLimits | None = None) -> None:
    async def scenario() -> None:
        master = Master(tmp_path / "state", load_limits=limits)
        client = TestClient(TestServer(make_app(master, insecure=True)))  # access: test_rest_auth
        await client.start_server()
        try:
            await body(client, master, tmp_path / "state")
        finally:
            for task in master._coordinators.values():
                task.cancel()
            await client.close()

    asyncio.run(scenario())


async def _refused(resp: Any, says: str) -> None:
    assert resp.status == 400, await resp.text()
    reason = (await resp.json())["error"]
    assert says in reason, reason


def _dead(pid: int) -> bool:
    """Gone, or a zombie its new parent has not reaped yet."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


async def _still_serves(client: TestClient[Any, Any], master: Master, state: Path) -> None:
    resp = await client.get("/api/v1/nodes")
    assert resp.status == 200
    assert await resp.json() == []
    assert master.deployments == {}
    assert sorted((state / "packages").iterdir()) == []  # the refused package is not kept


def test_a_file_that_sleeps_is_refused_after_the_time_limit_while_the_api_serves(
    tmp_path: Path,
) -> None:
    """A top-level ``time.sleep(60)`` blocked REST and gRPC for 60 s."""
    marker = tmp_path / "loading"

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        data = _package(tmp_path, _SLEEPS.format(marker=str(marker)))
        submit = asyncio.create_task(client.post("/api/v1/topologies?entry=topo.py", data=data))
        await asyncio.to_thread(wait_for, marker.exists, 30, "the file to start loading")
        resp = await client.get("/api/v1/nodes")
        assert resp.status == 200
        assert not submit.done()  # the API answered while the file was still loading
        await _refused(await submit, "took longer than 3 s, the time limit")
        loader, grandchild = (int(p) for p in marker.read_text().split())
        assert loader != os.getpid()
        await asyncio.to_thread(wait_for, lambda: _dead(loader), 30, "the loader to be gone")
        await asyncio.to_thread(
            wait_for, lambda: _dead(grandchild), 30, "what the file started to be gone"
        )
        await _still_serves(client, master, state)

    _run(tmp_path, body, LoadLimits(time_s=3.0))


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("import os\nos._exit(1)\n", "ended the process loading it (exit code 1)"),
        ("import sys\nsys.exit(3)\n", "exited with 3 while loading"),
        ("raise RuntimeError('boom')\n", "raised RuntimeError while loading: boom"),
        (
            "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
            "was killed by SIGSEGV",
        ),
        ("x = 1\n", "defines no topology"),
    ],
    ids=["os-exit", "sys-exit", "raises", "crashes", "no-topology"],
)
def test_a_file_that_exits_crashes_or_raises_is_refused_and_the_master_serves(
    tmp_path: Path, source: str, says: str
) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post(
            "/api/v1/topologies?entry=topo.py", data=_package(tmp_path, source)
        )
        await _refused(resp, says)
        await _still_serves(client, master, state)
        good = _package(tmp_path, _GOOD.format(tail=""), "good")
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=good)
        assert resp.status == 201, await resp.text()

    _run(tmp_path, body)


def test_a_file_that_allocates_past_the_memory_limit_is_refused(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        for source in (
            "huge = bytearray(16 << 30)\n",
            "hoard = []\nwhile True:\n    hoard.append(bytearray(1 << 20))\n",
        ):
            resp = await client.post(
                "/api/v1/topologies?entry=topo.py", data=_package(tmp_path, source)
            )
            await _refused(resp, "needs more than 256 MiB of memory, the limit")
            await _still_serves(client, master, state)

    _run(tmp_path, body, LoadLimits(memory_bytes=256 << 20))


def test_a_good_file_submits_edits_and_resumes_from_its_description(tmp_path: Path) -> None:
    """The master's plan comes from the description: names, parallelism, packing; an edit
    whose file sleeps is refused and changes nothing; a restarted master resumes it."""
    marker = tmp_path / "loading"

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post(
            "/api/v1/topologies?entry=topo.py&containers=2",
            data=_package(tmp_path, _GOOD.format(tail="")),
        )
        assert resp.status == 201, await resp.text()
        tm = master.tms["good"]
        assert [(c.name, c.kind, c.parallelism) for c in tm.topology.components] == [
            ("words", "spout", 2),
            ("count", "bolt", 3),
        ]
        assert sorted(i.container for i in tm.plan.instances) == [0, 0, 0, 1, 1]
        sleepy = _GOOD.format(tail=_SLEEPS.format(marker=str(marker)))
        resp = await client.post(
            "/api/v1/topologies/good/revisions?action=replace&base=1&components=count",
            data=_package(tmp_path, sleepy, "sleepy"),
        )
        await _refused(resp, "the edited topology does not load: loading topo.py took longer")
        assert master.tms["good"] is tm and tm.current == 1
        assert len(tm.revlog.records) == 1
        assert len(list((state / "packages").iterdir())) == 1  # the edit's package went

    _run(tmp_path, body, LoadLimits(time_s=3.0))

    async def restarted() -> None:
        master = Master(tmp_path / "state")
        await master.resume()
        try:
            tm = master.tms["good"]
            assert [(c.name, c.parallelism) for c in tm.topology.components] == [
                ("words", 2),
                ("count", 3),
            ]
        finally:
            for task in master._coordinators.values():
                task.cancel()

    asyncio.run(restarted())
