"""Edits of a topology's package as the console makes them: its files (and where each
component's code is, and the palette), an overlay of changed files as JSON, and a dry run
that answers the preview and changes nothing; refusals with the reason."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from headwater.cloud.master import Master
from headwater.common._package import build_package
from headwater.common.plan._child_loader import LoadLimits
from headwater.common.plan._package_index import index_isolated

from .test_master_http import _refused, _run, _stored

T = "/api/v1/topologies/pk"
STEPS = "def double(values):\n    return values * 2\n"
TOPO = """
from functools import partial

import steps

from headwater import Bolt, Spout, Topology, shuffle


class Words(Spout):
    outputs = ("word",)

    def next_tuple(self):
        pass


class Step(Bolt):
    def __init__(self, fn):
        self.fn = fn

    def process(self, tup):
        self.fn(tup.values)


class Extra(Bolt):
    \"\"\"Takes anything.\"\"\"

    def process(self, tup):
        pass


topology = (
    Topology("pk", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    .add_spout("words", Words)
    .add_bolt("count", partial(Step, steps.double), inputs={"words": shuffle()}, outputs=("word",))
)
"""
TAP = [{"name": "tap_1", "step": "tap", "inputs": {"count": "shuffle"}}]


def _package(tmp_path: Path) -> bytes:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "topo.py").write_text(TOPO)
    (folder / "steps.py").write_text(STEPS)
    return build_package(folder / "topo.py")[0]


async def _edit(client: TestClient[Any, Any], query: str, files: dict[str, Any]) -> Any:
    return await client.post(f"{T}/revisions?{query}", json={"files": files})


def test_files_overlay_edits_and_dry_runs(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()

        resp = await client.get(f"{T}/files")
        assert resp.status == 200, await resp.text()
        got = await resp.json()
        assert (got["revision"], got["entry"], got["index_error"]) == (1, "topo.py", "")
        assert {f["path"]: f["text"] for f in got["files"]} == {"steps.py": STEPS, "topo.py": TOPO}
        assert got["defined"]["count"][0] == {"file": "steps.py", "line": 1, "name": "double"}
        assert got["defined"]["words"][0]["name"] == "Words"
        steps = {p["step"] for p in got["palette"]}
        assert {"topo:Extra", "steps:double", "tap"} <= steps
        assert "topo:Step" not in steps  # it needs an argument: nothing to attach it with

        # a preview of a new steps.py: count replaced, nothing proposed, nothing kept
        stored = _stored(state)
        new_steps = STEPS.replace("* 2", "* 3")
        resp = await _edit(client, "action=replace&base=1&dry_run=1", {"steps.py": new_steps})
        assert resp.status == 200, await resp.text()
        preview = (await resp.json())["diff"]
        assert (preview["replaced"], preview["unchanged"]) == (["count"], ["words"])
        assert (preview["domains"], preview["edge"]) == (["cloud"], False)
        assert master.tms["pk"].current == 1 and len(master.tms["pk"].revlog.records) == 1
        assert _stored(state) == stored

        # attach a tap from the palette: the sidecar beside the topology file
        sidecar = json.dumps(TAP)
        resp = await _edit(
            client, "action=attach&base=1&dry_run=1", {"headwater_attached.json": sidecar}
        )
        assert resp.status == 200, await resp.text()
        assert (await resp.json())["diff"]["added"] == ["tap_1"]
        extra = [{"name": "extra_1", "step": "topo:Extra", "inputs": {"count": "fields:word"}}]
        resp = await _edit(
            client,
            "action=attach&base=1&dry_run=1",
            {"headwater_attached.json": json.dumps([*TAP, *extra])},
        )
        assert resp.status == 200, await resp.text()
        assert (await resp.json())["diff"]["added"] == ["tap_1", "extra_1"]
        resp = await client.post(
            f"{T}/revisions?action=replace&base=1&parallelism=count:3&dry_run=1"
        )
        assert resp.status == 200, await resp.text()
        assert (await resp.json())["diff"]["rescaled"] == {"count": [1, 3]}

        # refusals, each with the reason; nothing changes
        refusals: list[tuple[dict[str, Any], str]] = [
            ({"../evil.py": "x"}, "not a file inside the package"),
            ({"/abs.py": "x"}, "not a file inside the package"),
            ({"steps.py": 3}, "as a string, or null"),
            ({"ghost.py": None}, "no file 'ghost.py' to delete"),
            ({"steps.py": "def double(:\n"}, "SyntaxError"),
            ({"headwater_attached.json": "[{}]"}, "headwater_attached.json"),
        ]
        for files, says in refusals:
            await _refused(await _edit(client, "action=replace&base=1&dry_run=1", files), 400, says)
        await _refused(await _edit(client, "action=replace&base=1", {}), 400, "at least one file")
        resp = await client.post(
            f"{T}/revisions?action=replace&base=1",
            data=b"{",
            headers={"Content-Type": "application/json"},
        )
        await _refused(resp, 400, "send JSON")
        await _refused(await client.get(f"{T}/files?revision=9"), 404, "has no revision 9")
        await _refused(await client.get(f"{T}/files?revision=x"), 400, "a revision number")
        assert master.tms["pk"].current == 1 and _stored(state) == stored

        # applied: a new revision whose package is the old one with steps.py changed
        resp = await _edit(client, "action=replace&base=1&author=me", {"steps.py": new_steps})
        assert resp.status == 202, await resp.text()
        record = await resp.json()
        assert (record["revision"], record["diff"]["replaced"]) == (2, ["count"])
        await _refused(
            await _edit(client, "action=replace&base=0", {"steps.py": STEPS}),
            409,
            "against revision 0",
        )

        # a viewer reads neither the code nor previews an edit
        viewer = master.tokens.create("viewer", None, "")
        auth = {"Authorization": f"Bearer {viewer}"}
        assert (await client.get(f"{T}/files", headers=auth)).status == 403
        resp = await client.post(
            f"{T}/revisions?action=replace&base=1&dry_run=1",
            json={"files": {"steps.py": STEPS}},
            headers=auth,
        )
        assert resp.status == 403

    _run(tmp_path, body)


def test_where_the_iot_example_defines_each_component() -> None:
    """Loaded in a child: a component's step functions before the class that runs them, in
    the component version and in the DSL's fused chains."""
    iot = Path(__file__).resolve().parents[2] / "examples" / "iot"

    def names(entry: str) -> dict[str, list[str]]:
        found = asyncio.run(index_isolated(iot, entry, LoadLimits()))
        return {c: [f"{d['file']}:{d['name']}" for d in v] for c, v in found["defined"].items()}

    components = names("pipeline.py")
    assert components["smooth"][0] == "iot_steps.py:smooth"
    assert components["parse"] == ["pipeline.py:Parse"]
    dsl = names("pipeline_dsl.py")
    assert "iot_steps.py:smooth" in dsl["last_seq"]  # fused: dedup, smooth, anomaly
    assert "iot_steps.py:reading_ts" in dsl["windows"]
