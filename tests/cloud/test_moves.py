"""Moves between edge and cloud (issue 37) through the API: a preview of a move that checks
out, each refusal with its reason, a stale base 409, a move of a component without keyed
state accepted as a revision both sides switch to, and the switches not built yet (keyed
state, an input the cloud also reads) a 501 that changes nothing."""

from __future__ import annotations

import asyncio
import io
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from headwater.cloud.master import Master
from headwater.common._package import build_package
from headwater.common.plan._package_placement import package_with_placement

from .test_master_http import _refused, _run, _stored

T = "/api/v1/topologies/mv"
TOPO = """
from headwater import Bolt, Spout, Topology, fields, shuffle
from headwater.placement import edge, sites


class Readings(Spout):
    outputs = ("site", "sensor", "value")

    def next_tuple(self):
        pass


class Pass(Bolt):
    outputs = ("site", "sensor", "value")

    def process(self, tup):
        pass


class Sink(Bolt):
    def process(self, tup):
        pass


topology = (
    Topology("mv", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    .add_spout("readings", Readings, placement=edge())
    .add_bolt("parse", Pass, inputs={"readings": shuffle()}, placement=edge())
    .add_bolt("tag", Pass, inputs={"parse": shuffle()}, placement=edge())
    .add_bolt("windows", Pass, inputs={"parse": fields("sensor")}, config=sites("site"))
    .add_bolt("odd", Pass, inputs={"parse": fields("sensor")}, config=sites("zone"))
    .add_bolt("counts", Pass, inputs={"parse": fields("sensor")})
    .add_bolt("total", Pass, inputs={"windows": shuffle()})
    .add_bolt("relay", Pass, inputs={"parse": shuffle()})
    .add_bolt("land", Sink, inputs={"tag": shuffle(), "total": shuffle()})
)
"""


def _package(tmp_path: Path) -> bytes:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "topo.py").write_text(TOPO)
    return build_package(folder / "topo.py")[0]


def _files(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


async def _move(client: TestClient[Any, Any], query: str) -> Any:
    return await client.post(f"{T}/move?{query}")


def test_a_move_that_checks_out_is_previewed_and_not_yet_switched(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        stored = _stored(state)

        resp = await _move(client, "components=windows&to=edge&base=1&dry_run=1")
        assert resp.status == 200, await resp.text()
        preview = await resp.json()
        assert (preview["dry_run"], preview["action"], preview["entry"]) == (
            True,
            "move",
            "topo.py",
        )
        assert preview["diff"]["replaced"] == ["windows"]
        assert preview["diff"]["domains"] == ["cloud", "edge"]  # both sides switch
        assert "total" in preview["diff"]["unchanged"]
        assert preview["not_built"] is None  # applying it would switch (the fence splits parse)
        assert _stored(state) == stored  # a preview keeps nothing

        # the moved revision is the running code with the placement beside it
        cur = master.tms["mv"].revlog.find(1)
        assert cur is not None
        data = package_with_placement(
            master.packages.get(cur.package), "topo.py", {"windows": "edge"}
        )
        files = _files(data)
        assert json.loads(files.pop("headwater_placement.json")) == {"windows": "edge"}
        assert files == _files(master.packages.get(cur.package))

        # a keyed component moved with another: that switch is not built, a 501 that says
        # so (the preview says it ahead), and nothing changes
        both = "components=windows,relay&to=edge&base=1"
        preview = await (await _move(client, both + "&dry_run=1")).json()
        assert "moving a keyed component with others is not built yet" in preview["not_built"]
        await _refused(
            await _move(client, both), 501, "moving a keyed component with others is not built yet"
        )
        assert master.tms["mv"].current == 1
        assert [r.revision for r in master.tms["mv"].revlog.records] == [1]
        assert _stored(state) == stored

    _run(tmp_path, body)


def test_each_refused_move_says_why_and_changes_nothing(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        stored = _stored(state)
        for query, says in (
            # inputs not available on the target side
            ("components=total&to=edge", "which runs in the cloud"),
            ("components=windows&to=edge(site=a)", "an edge subgraph runs whole"),
            # a cycle across the boundary
            ("components=parse&to=cloud", "cross the edge/cloud boundary twice"),
            # state with no declared key -> site relation
            ("components=counts&to=edge", "declares no key -> site relation"),
            ("components=odd&to=edge", "has no such field"),
            # what is not a move
            ("components=readings&to=cloud", "is a spout"),
            ("components=windows&to=cloud", "already runs at the cloud"),
            ("components=nope&to=edge", "has no component nope"),
            ("components=&to=edge", "name the components"),
            ("components=windows&to=mars", "use cloud, edge"),
            ("components=windows&to=edge(site)", "is not LABEL=VALUE"),
            ("components=windows", "say where to"),
        ):
            for dry in ("", "&dry_run=1"):
                resp = await _move(client, f"{query}&base=1{dry}")
                await _refused(resp, 400, says)
        await _refused(await _move(client, "components=windows&to=edge"), 400, "?base=REV")
        resp = await client.post(f"{T}/revisions?action=move&base=1&components=windows")
        await _refused(resp, 400, "a move has a route of its own")
        resp = await _move(client, "components=windows&to=edge&base=7")
        await _refused(resp, 409, "made against revision 7")
        assert (await resp.json())["current"] == 1
        resp = await client.post("/api/v1/topologies/gone/move?components=a&to=edge&base=1")
        await _refused(resp, 404, "no topology named 'gone'")
        assert master.tms["mv"].current == 1
        assert _stored(state) == stored

    _run(tmp_path, body)


def test_a_move_is_operator_work_and_documented() -> None:
    from headwater.cloud._access import ACCESS
    from headwater.cloud.master._openapi import openapi

    assert ACCESS[("POST", "/api/v1/topologies/{name}/move")] == "operator"
    doc = openapi("test")
    assert "post" in doc["paths"]["/api/v1/topologies/{name}/move"]


async def _cli(client: TestClient[Any, Any], state: Path, *args: str) -> tuple[int, str, str]:
    """``headwater ARGS`` against the test's master, as a user runs it."""
    token = (state / "admin.token").read_text().strip()
    url = f"http://{client.host}:{client.port}"
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "headwater", *args, "--master", url, "--token", token),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def test_the_cli_previews_a_move_and_says_why_one_is_refused(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        move = ("move", "mv", "windows", "relay", "--to", "edge", "--base", "1")
        rc, out, err = await _cli(client, state, *move, "--dry-run")
        assert rc == 0, err
        assert "the move checks out: windows, relay to edge" in out
        assert "domains that switch: cloud, edge" in out
        assert "but not yet: the move of 'windows' checks out, but moving a keyed component" in out
        rc, out, err = await _cli(client, state, *move)
        assert rc == 2 and "not built yet" in err, (out, err)
        for args, says in (
            (("mv", "counts", "--to", "edge", "--base", "1"), "no key -> site relation"),
            (("mv", "total", "--to", "edge", "--base", "1"), "not available at edge()"),
            (("mv", "parse", "--to", "cloud", "--base", "1"), "boundary twice"),
            (("mv", "windows", "--to", "edge", "--base", "5"), "made against revision 5"),
        ):
            rc, out, err = await _cli(client, state, "move", *args)
            assert rc == 2 and says in err and "Traceback" not in err, (args, out, err)
        assert master.tms["mv"].current == 1

    _run(tmp_path, body)


def test_agents_that_cannot_say_which_keys_are_theirs_refuse_the_move(tmp_path: Path) -> None:
    from headwater.cloud.master._nodes import NodeRecord
    from headwater.common.wire.proto import runtime_pb2 as pb

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        dep = master.deployments["mv"]

        def agents(**labels: dict[str, str]) -> None:
            dep.agents[:] = list(labels)
            for agent, lab in labels.items():
                info = pb.NodeInfo(node_id=agent, kind="agent", labels=lab)
                master.nodes.records[agent] = NodeRecord(info)

        move = "components=windows&to=edge&base=1&dry_run=1"
        agents(a1={"site": "plant-1"}, a2={"site": "plant-1"})
        await _refused(await _move(client, move), 400, "'a1' and 'a2' both have site=plant-1")
        agents(a1={"site": "plant-1"}, a3={"zone": "b"})
        await _refused(await _move(client, move), 400, "agent 'a3' runs 'windows' at edge()")
        agents(a1={"site": "plant-1"}, a2={"site": "plant-2"})
        assert (await _move(client, move)).status == 200
        # a stateless component needs no such label; a keyed one moved with it does
        agents(a1={"zone": "b"}, a2={"zone": "b"})
        assert (await _move(client, "components=relay&to=edge&base=1&dry_run=1")).status == 200
        resp = await _move(client, "components=relay,windows&to=edge&base=1&dry_run=1")
        await _refused(resp, 400, "has no label 'site'")

    _run(tmp_path, body)


STATELESS = """
from headwater import Bolt, Spout, Topology, shuffle
from headwater.placement import edge


class Readings(Spout):
    outputs = ("sensor", "value")

    def next_tuple(self):
        pass


class Tag(Bolt):
    outputs = ("sensor", "value")

    def process(self, tup):
        pass


topology = (
    Topology("st", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    .add_spout("readings", Readings, placement=edge())
    .add_bolt("tag", Tag, inputs={"readings": shuffle()})
    .add_bolt("sink", Tag, inputs={"tag": shuffle()})
)
"""


def test_a_component_without_keyed_state_moves_as_a_revision_both_sides_switch_to(
    tmp_path: Path,
) -> None:
    from headwater.common.plan._domains import receives_uplink
    from headwater.common.wire._states import RevisionStatus

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        folder = tmp_path / "st"
        folder.mkdir()
        (folder / "st.py").write_text(STATELESS)
        resp = await client.post(
            "/api/v1/topologies?entry=st.py", data=build_package(folder / "st.py")[0]
        )
        assert resp.status == 201, await resp.text()
        master.deployments["st"].agents[:] = ["a1"]
        sent: list[tuple[str, Any]] = []
        master.edits.send = lambda agent, order: sent.append((agent, order))
        resp = await client.post("/api/v1/topologies/st/move?components=tag&to=edge&base=1")
        assert resp.status == 202, await resp.text()
        record = await resp.json()
        assert (record["revision"], record["action"]) == (2, "move")
        assert record["diff"]["replaced"] == ["tag"]
        tm = master.tms["st"]
        rec = tm.revlog.find(2)
        assert rec is not None
        # the placement file marks where it came from: the cloud runs it as a hand-over bolt
        placed = json.loads(_files(master.packages.get(rec.package))["headwater_placement.json"])
        assert placed == {"tag": {"from": "cloud", "to": "edge"}}
        cloud = tm.revisions[2].topology
        assert receives_uplink(cloud.component("tag"))  # a bolt that takes the agents' rows
        assert {c.name for c in cloud.components} == {"readings", "tag", "sink"}
        # the agents are ordered to switch once the cloud has (it may refuse and roll back)
        await asyncio.sleep(0.3)
        assert sent == [] and master.deployments["st"].edge_revision == {}
        tm.revisions.finish(2, RevisionStatus.APPLIED)  # as the cloud's switch ends
        for _ in range(100):
            if sent:
                break
            await asyncio.sleep(0.05)
        assert [a for a, _ in sent] == ["a1"]
        assert master.deployments["st"].edge_revision["revision"] == 2

    _run(tmp_path, body)


def test_a_component_the_code_places_on_the_edge_at_more_than_one_task_is_not_moved_yet(
    tmp_path: Path,
) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        folder = tmp_path / "st"
        folder.mkdir()
        text = STATELESS.replace(
            '.add_bolt("tag", Tag, inputs={"readings": shuffle()})',
            '.add_bolt("tag", Tag, inputs={"readings": shuffle()}, parallelism=2, '
            "placement=edge())",
        )
        (folder / "st.py").write_text(text)
        resp = await client.post(
            "/api/v1/topologies?entry=st.py", data=build_package(folder / "st.py")[0]
        )
        assert resp.status == 201, await resp.text()
        resp = await client.post("/api/v1/topologies/st/move?components=tag&to=cloud&base=1")
        await _refused(resp, 501, "one receiver task of its rows")
        assert master.tms["st"].current == 1

    _run(tmp_path, body)
