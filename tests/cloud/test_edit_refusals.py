"""Edits as a careless operator or an attacker makes them: each refused with a 4xx that says
what to do (never a 500), nothing kept, and user code loaded in bounded children only."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from headwater.cloud.master import Master, _code
from headwater.common._package import zip_package
from headwater.common._package_overlay import MAX_SHOWN_BYTES, package_listing
from headwater.common.plan._child_loader import load_isolated

from .test_master_http import _refused, _run, _stored
from .test_package_edits import TOPO, _edit, _package

T = "/api/v1/topologies/pk"


def _attached(**doc: Any) -> dict[str, str]:
    return {
        "headwater_attached.json": json.dumps(
            [{"name": "x", "inputs": {"count": "shuffle"}, **doc}]
        )
    }


def test_paths_no_file_system_takes_are_refused(tmp_path: Path) -> None:
    """A name over 255 bytes, a path over 1 KiB or a lone surrogate was a 500 (the unpack
    or the zip failed after the checks): now a 400 from the path rules, for an edit and a
    submitted zip alike."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        stored = _stored(state)
        for path in ("a" * 300 + ".py", "d/" * 600 + "x.py", "\ud800.py", "é" * 200 + ".py"):
            resp = await _edit(client, "action=replace&base=1&dry_run=1", {path: "x = 1\n"})
            await _refused(resp, 400, "each name at most 255 bytes")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("topo.py", TOPO.replace('"pk"', '"long"'))
            zf.writestr("b" * 300 + ".py", "")
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=buf.getvalue())
        await _refused(resp, 400, "would land outside its folder")
        assert _stored(state) == stored and list(master.tms) == ["pk"]

    _run(tmp_path, body)


def test_careless_edits_say_what_to_do(tmp_path: Path) -> None:
    """No action named said " needs the topology file"; a rollback to the running revision
    made a new revision that changed nothing."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        stored = _stored(state)
        for action in ("", "submit", "zap"):
            resp = await client.post(f"{T}/revisions?action={action}&base=1")
            await _refused(resp, 400, "?action=attach, replace, remove or rollback")
        resp = await client.post(f"{T}/revisions?action=rollback&base=1&to=1")
        await _refused(resp, 400, "nothing to roll back")
        # a rollback with a package: it was stored and, the rollback made, never deleted
        other = zip_package({"topo.py": TOPO.encode(), "steps.py": b"x = 2\n"})
        resp = await client.post(f"{T}/revisions?action=rollback&base=1&to=1", data=other)
        await _refused(resp, 400, "a rollback sends no package")
        resp = await _edit(client, "action=rollback&base=1&to=1", {"steps.py": "x = 1\n"})
        await _refused(resp, 400, "a rollback sends no package")
        assert _stored(state) == stored
        assert master.tms["pk"].current == 1 and len(master.tms["pk"].revlog.records) == 1
        # a load's error names the package's files, not the master's state folder
        for files, says in (
            ({"headwater_parallelism.json": "[["}, "headwater_parallelism.json: not a JSON"),
            ({"steps.py": "def double(:\n"}, "SyntaxError"),
        ):
            resp = await _edit(client, "action=replace&base=1&dry_run=1", files)
            await _refused(resp, 400, says)
            assert str(state) not in (await resp.json())["error"]
        resp = await _edit(
            client, "action=replace&base=1&dry_run=1&entry=steps.py", {"steps.py": "x = 1\n"}
        )
        await _refused(resp, 400, "does not load: steps.py defines no topology")

    _run(tmp_path, body)


def test_an_attached_step_is_the_packages_own_code(tmp_path: Path) -> None:
    """headwater_attached.json named any importable function (os:system, builtins:eval) as a
    map: now only the package's own modules (and the platform steps) are looked up."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        for doc in (
            {"step": "map", "fn": "os:system"},
            {"step": "filter", "fn": "builtins:eval"},
            {"step": "keyed", "fn": "subprocess:run", "key": "word"},
            {"step": "headwater:Bolt"},
            {"step": "map", "fn": "../steps:double"},
        ):
            resp = await _edit(client, "action=attach&base=1&dry_run=1", _attached(**doc))
            await _refused(resp, 400, "is not a module of the package")
        # a module of the package named as one already imported is still that one: refused
        resp = await _edit(
            client,
            "action=attach&base=1&dry_run=1",
            {"os.py": "def system(x):\n    return x\n", **_attached(step="map", fn="os:system")},
        )
        await _refused(resp, 400, "not the package's file of that name")
        # nor what a module of the package imported: topo's `shuffle`, a builtin reached by
        # attributes
        for doc in (
            {"step": "map", "fn": "topo:shuffle"},
            {"step": "map", "fn": "steps:double.__globals__.get"},
            {"step": "topo:Bolt"},
        ):
            resp = await _edit(client, "action=attach&base=1&dry_run=1", _attached(**doc))
            await _refused(resp, 400, "attach a function or Bolt the package itself defines")
        for doc in ({"step": "map", "fn": "steps:double"}, {"step": "topo:Extra"}, {"step": "tap"}):
            resp = await _edit(client, "action=attach&base=1&dry_run=1", _attached(**doc))
            assert resp.status == 200, await resp.text()

    _run(tmp_path, body)


def test_a_storm_of_previews_loads_a_few_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every dry run started its own child (1 GiB, 30 s each) at once: now at most
    MAX_CHILD_LOADS load together, the rest wait, and each preview keeps nothing."""
    running, most = 0, 0
    real, limit = load_isolated, getattr(_code, "MAX_CHILD_LOADS", 4)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            return await real(*args, **kwargs)
        finally:
            running -= 1

    monkeypatch.setattr(_code, "load_isolated", counted)

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=_package(tmp_path))
        assert resp.status == 201, await resp.text()
        stored, most_before = _stored(state), most
        steps = "def double(values):\n    return values * {}\n"
        answers = await asyncio.gather(
            *(
                _edit(client, "action=replace&base=1&dry_run=1", {"steps.py": steps.format(n)})
                for n in range(3, 3 + 3 * limit)
            )
        )
        assert [a.status for a in answers] == [200] * len(answers)
        assert most_before == 1 and most == limit
        assert _stored(state) == stored and not list((state / "code").glob("*/steps.py"))[1:]

    _run(tmp_path, body)


def test_the_last_admin_token_is_kept_and_descriptions_are_bounded(tmp_path: Path) -> None:
    """Revoking the last admin token (the tokens page's own, one click and a confirm) locked
    everyone out of submitting, killing and tokens for good; a 1 MB description was kept in
    tokens.json and carried by every listing."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        admin = client.session.headers["Authorization"].split()[1].partition(".")[0]
        resp = await client.delete(f"/api/v1/tokens/{admin}")
        await _refused(resp, 409, "last admin token: create another admin token first")
        resp = await client.post(
            "/api/v1/tokens", json={"role": "viewer", "description": "d" * 201}
        )
        await _refused(resp, 400, "at most 200 characters")
        resp = await client.post("/api/v1/tokens", json={"role": "admin", "description": "spare"})
        assert resp.status == 201, await resp.text()
        spare = (await resp.json())["token"]
        resp = await client.delete(f"/api/v1/tokens/{admin}")
        assert resp.status == 200, await resp.text()
        auth = {"Authorization": f"Bearer {spare}"}
        resp = await client.delete(f"/api/v1/tokens/{spare.partition('.')[0]}", headers=auth)
        await _refused(resp, 409, "last admin token")

    _run(tmp_path, body)


def test_the_listing_never_reads_a_file_too_large_to_show(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The files view read every file of the package (up to 256 MiB) into memory for each
    request, and then showed none of the large ones: now those are listed unread."""
    read: list[str] = []
    real = zipfile.ZipFile.read

    def counted(self: zipfile.ZipFile, name: Any, pwd: bytes | None = None) -> bytes:
        read.append(name if isinstance(name, str) else name.filename)
        return real(self, name, pwd)

    monkeypatch.setattr(zipfile.ZipFile, "read", counted)
    data = zip_package({"topo.py": b"x = 1\n", "data.csv": b"1," * (MAX_SHOWN_BYTES // 2 + 1)})
    listing = {f["path"]: f for f in package_listing(data)}
    assert (listing["data.csv"]["why"], listing["data.csv"]["text"]) == ("too large", None)
    assert listing["data.csv"]["size"] == MAX_SHOWN_BYTES + 2
    assert listing["topo.py"]["text"] == "x = 1\n"
    assert read == ["topo.py"]
