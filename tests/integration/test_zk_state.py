"""A master on ZooKeeper (``--state zk://``): its records outlive it and a second master on
the same ZooKeeper, with an empty state folder of its own, lists them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from headwater.cloud.master._main import NO_BLOB_STORE_WARNING
from headwater.common.statemgr import ZkStateManager

from .._ports import free_port
from .._zookeeper import ZooKeeper
from ..cloud._packages import topology_package
from ._daemons import Daemons
from ._support import wait_for

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster]


def _call(daemons: Daemons, method: str, path: str, body: bytes | None = None) -> Any:
    request = urllib.request.Request(
        f"{daemons.http}{path}", data=body, method=method, headers=daemons.auth
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read())


def _second_master(daemons: Daemons, url: str, auth: Path) -> dict[str, Any]:
    ready = daemons.tmp / "second.json"
    daemons._spawn(
        [
            "master",
            *("--host", "127.0.0.1", "--port", str(free_port())),
            *("--http-port", str(free_port()), "--join-port", str(free_port())),
            *("--state-dir", str(daemons.tmp / "second"), "--ready-file", str(ready)),
            *("--state", url, "--state-auth-file", str(auth), "--no-advertise"),
        ],
        "second.log",
    )

    def up() -> dict[str, Any] | None:
        return json.loads(ready.read_text()) if ready.exists() else None

    return wait_for(up, 60, "the second master")


def test_a_second_master_on_the_same_zookeeper_lists_what_the_first_kept(
    daemons: Daemons, zookeeper: ZooKeeper, tmp_path: Path
) -> None:
    auth = tmp_path / "zk.auth"
    auth.write_text("headwater-master:correct-horse\n")
    os.chmod(auth, 0o600)
    url = zookeeper.url("hw")
    daemons.start_master(extra=("--state", url, "--state-auth-file", str(auth), "--no-advertise"))
    first_ca = daemons.ca_fingerprint
    package = topology_package(tmp_path, "kept")
    submitted = _call(daemons, "POST", "/api/v1/topologies?entry=topo.py&containers=1", package)
    assert submitted["topology"] == "kept"
    made = _call(daemons, "POST", "/api/v1/tokens", json.dumps({"role": "viewer"}).encode())
    tokens = sorted(t["id"] for t in _call(daemons, "GET", "/api/v1/tokens"))
    assert made["id"] in tokens and len(tokens) == 2  # the admin's and the viewer's
    revisions = _call(daemons, "GET", "/api/v1/topologies/kept/revisions")["revisions"]
    assert [r["revision"] for r in revisions] == [1]
    # the records are in ZooKeeper, not in the master's folder
    for name in ("tokens.json", "deployments.json", "tls", "topologies"):
        assert not (daemons.tmp / "master" / name).exists(), name
    assert (daemons.tmp / "master" / "admin.token").exists()  # the operator's, on the host
    # the packages are on its disk alone: said once, at start
    assert (daemons.tmp / "master.log").read_text().count(NO_BLOB_STORE_WARNING) == 1
    daemons.stop()
    daemons.procs.clear()

    info = _second_master(daemons, url, auth)
    daemons.http = info["http"]  # the first master's admin token is the cluster's
    assert info["ca_fingerprint"] == first_ca
    assert sorted(t["id"] for t in _call(daemons, "GET", "/api/v1/tokens")) == tokens
    [listed] = _call(daemons, "GET", "/api/v1/topologies")
    assert listed["name"] == "kept" and listed["package"] == submitted["package"]
    assert listed["held"] == (
        f"not resumed: package {submitted['package']} is not in this master's package "
        "store (packages stay on the disk of the master that took them unless the masters "
        "share a --blob-store)"
    )
    again = _call(daemons, "GET", "/api/v1/topologies/kept/revisions")
    assert again["revisions"] == revisions and again["current"] == 1
    assert not (daemons.tmp / "second" / "admin.token").exists()  # tokens were there already
    # the held deployment stays in the shared record until it is killed
    assert _call(daemons, "DELETE", "/api/v1/topologies/kept") == {"killed": "kept"}
    assert _call(daemons, "GET", "/api/v1/topologies") == []
    daemons.stop()
    state = ZkStateManager(zookeeper.hosts, "/hw", "headwater-master", "correct-horse")
    try:
        assert state.get("deployments.json") == b"[]"
        assert state.children("topologies") == []
        assert state.get("tls/ca.key") is not None
    finally:
        state.close()


def test_a_zk_state_without_credentials_is_refused_in_one_line(tmp_path: Path) -> None:
    master = [sys.executable, "-m", "headwater", "master", "--state-dir", str(tmp_path / "m")]
    run = subprocess.run(
        [*master, "--state", "zk://127.0.0.1:2181/hw", "--no-advertise"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == (
        "headwater: error: a zk:// state needs the master's ZooKeeper credentials: write "
        "user:password in a file only you can read (chmod 600 FILE) and give it with "
        "--state-auth-file FILE"
    )
