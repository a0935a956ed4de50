"""A replace that changes only parallelism: the running code, its package with
``headwater_parallelism.json`` beside the file, refused with a reason when malformed."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from headwater.cloud.master import Master

from ._packages import topology_package
from .test_master_http import _refused, _run

EDITS = "/api/v1/topologies/ok/revisions"
EXACTLY_ONCE = {"topology.reliability.mode": "EFFECTIVELY_ONCE"}  # live edits need checkpoints


def _package(tmp_path: Path) -> bytes:
    return topology_package(tmp_path, "ok", config=EXACTLY_ONCE)


def _files(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def test_a_replace_with_parallelism_runs_the_current_code_rescaled(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        tm = master.tms["ok"]
        first = tm.revlog.find(1)
        assert first is not None

        resp = await client.post(f"{EDITS}?action=replace&base=1&parallelism=count:3")
        assert resp.status == 202, await resp.text()
        record = await resp.json()
        assert (record["revision"], record["action"], record["entry"]) == (2, "replace", "topo.py")
        assert record["diff"]["replaced"] == ["count"]
        assert record["diff"]["added"] == record["diff"]["removed"] == []
        files = _files(master.packages.get(record["package"]))
        old = _files(master.packages.get(first.package))
        assert json.loads(files.pop("headwater_parallelism.json")) == {"count": 3}
        assert files == old  # the code itself is the running code, byte for byte
        whole = master.described(record["package"], "topo.py")
        assert whole is not None
        assert [(c.name, c.parallelism) for c in whole.components] == [("words", 1), ("count", 3)]

    _run(tmp_path, body)


def test_a_malformed_or_misplaced_parallelism_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        stored = sorted(p.name for p in (state / "packages").iterdir())
        for query, status, says in [
            ("parallelism=count", 400, "give COMPONENT:N pairs"),
            ("parallelism=count:x", 400, "give COMPONENT:N pairs"),
            ("parallelism=count:0", 400, "from 1 to 10000"),
            ("parallelism=count:99999", 400, "from 1 to 10000"),
            ("parallelism=ghost:2", 400, "topology 'ok' has no component ghost"),
            ("parallelism=count:1", 400, "that is the parallelism running now (count 1)"),
        ]:
            resp = await client.post(f"{EDITS}?action=replace&base=1&{query}")
            await _refused(resp, status, says)
        resp = await client.post(f"{EDITS}?action=attach&base=1&parallelism=count:2")
        await _refused(resp, 400, "parallelism goes with a replace that sends no file")
        resp = await client.post(
            f"{EDITS}?action=replace&base=1&parallelism=count:2", data=_package(tmp_path)
        )
        await _refused(resp, 400, "parallelism goes with a replace that sends no file")
        resp = await client.post(f"{EDITS}?action=replace&base=7&parallelism=count:2")
        assert resp.status == 409 and (await resp.json())["current"] == 1
        assert master.tms["ok"].current == 1 and len(master.tms["ok"].revlog.records) == 1
        assert sorted(p.name for p in (state / "packages").iterdir()) == stored

    _run(tmp_path, body)
