"""A recorded deployment the master cannot resume is held in the record, listed with why,
never dropped at the next save; killing it takes its record and its state."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master

from ._packages import topology_package


def test_a_deployment_without_its_package_is_held_listed_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def submit() -> str:
        master = Master(state)
        done = await master.submit(topology_package(tmp_path, "held"), "topo.py", 1)
        for task in master._coordinators.values():
            task.cancel()
        return str(done["package"])

    package = asyncio.run(submit())
    shutil.rmtree(state / "packages")  # as on a master whose disk lost them

    async def again() -> None:
        master = Master(state)
        await master.resume()
        admin = (state / "admin.token").read_text().strip()
        client = TestClient(
            TestServer(make_app(master)), headers={"Authorization": f"Bearer {admin}"}
        )
        await client.start_server()
        try:
            assert master.deployments == {}
            master.book.save()  # a save keeps it
            assert [d["name"] for d in json.loads((state / "deployments.json").read_text())] == [
                "held"
            ]
            listed: list[dict[str, Any]] = await (await client.get("/api/v1/topologies")).json()
            assert [(t["name"], t["package"], t["revision"]) for t in listed] == [
                ("held", package, 1)
            ]
            assert listed[0]["held"] == (
                f"not resumed: package {package} is not in this master's package store "
                "(packages stay on the disk of the master that took them unless the masters "
                "share a --blob-store)"
            )
            revisions = await (await client.get("/api/v1/topologies/held/revisions")).json()
            assert [r["action"] for r in revisions["revisions"]] == ["submit"]
            refused = await client.post(
                "/api/v1/topologies?entry=topo.py",
                data=topology_package(tmp_path / "again", "held"),
            )
            assert refused.status == 400
            assert (await refused.json())["error"] == (
                f"topology 'held' is held in the record ({listed[0]['held']}); kill it first "
                "(`headwater kill held`)"
            )
            killed = await client.delete("/api/v1/topologies/held")
            assert await killed.json() == {"killed": "held"}
            assert json.loads((state / "deployments.json").read_text()) == []
            assert not (state / "topologies" / "held").exists()
        finally:
            await client.close()

    asyncio.run(again())
