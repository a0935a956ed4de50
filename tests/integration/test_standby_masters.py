"""Standby masters on one ZooKeeper (issue 38): one leads, the other redirects to it; the
leader SIGKILLed, the standby leads with a higher leader epoch and the worker, given both
addresses, attaches to it and obeys it; a leader cut off from ZooKeeper stops at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from headwater._master_client import Client
from headwater.common._exceptions import HeadwaterError

from .._ports import free_port
from .._zookeeper import ZooKeeper
from ..cloud._packages import topology_package
from ._daemons import Daemons
from ._support import wait_for

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster]


@dataclass
class _Master:
    name: str
    grpc_port: int
    http_port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"


def _start(daemons: Daemons, master: _Master, url: str, auth: Path) -> None:
    ready = daemons.tmp / f"{master.name}.json"
    ready.unlink(missing_ok=True)
    master.proc = daemons._spawn(
        [
            "master",
            *("--host", "127.0.0.1", "--port", str(master.grpc_port)),
            *("--http-port", str(master.http_port), "--join-port", str(free_port())),
            *("--state-dir", str(daemons.tmp / master.name), "--ready-file", str(ready)),
            *("--state", url, "--state-auth-file", str(auth), "--no-advertise"),
        ],
        f"{master.name}.log",
    )


def _leads(daemons: Daemons, master: _Master) -> bool:
    return (daemons.tmp / f"{master.name}.json").exists()


def _get(url: str, token: str = "") -> tuple[int, Any, str]:
    """``(status, body, Location)``, redirects not followed."""

    class _Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.build_opener(_Stay).open(
            urllib.request.Request(url, headers=headers), timeout=10
        ) as r:
            return r.status, json.loads(r.read()), ""
    except urllib.error.HTTPError as err:
        body = err.read()
        try:
            said = json.loads(body)
        except ValueError:
            said = body.decode(errors="replace")  # a redirect's text
        return err.code, said, err.headers.get("Location", "")


def _online(master: _Master, token: str, node: str) -> bool:
    try:
        status, nodes, _ = _get(f"{master.http}/api/v1/nodes", token)
    except OSError:
        return False
    return status == 200 and any(n["id"] == node and n["online"] for n in nodes)


@pytest.fixture
def pair(daemons: Daemons, zookeeper: ZooKeeper, tmp_path: Path) -> tuple[_Master, _Master, str]:
    """Master a leading, b standing by, on one ZooKeeper: ``(a, b, the admin token)``."""
    auth = tmp_path / "zk.auth"
    auth.write_text("headwater-master:correct-horse\n")
    os.chmod(auth, 0o600)
    url = zookeeper.url("hw")
    a, b = (_Master(n, free_port(), free_port()) for n in ("a", "b"))
    _start(daemons, a, url, auth)
    wait_for(lambda: _leads(daemons, a), 60, "master a to lead")
    _start(daemons, b, url, auth)

    def standing_by() -> bool:
        try:
            return bool(_get(f"{b.http}/api/v1/leader")[1]["role"] == "standby")
        except OSError:
            return False

    wait_for(standing_by, 60, "master b to stand by")
    token = (daemons.tmp / "a" / "admin.token").read_text().strip()
    return a, b, token


def test_the_standby_redirects_and_leads_when_the_leader_is_killed(
    daemons: Daemons, pair: tuple[_Master, _Master, str], tmp_path: Path
) -> None:
    a, b, token = pair
    assert _get(f"{b.http}/api/v1/leader")[1] == {
        "role": "standby",
        "leader": {"grpc": a.grpc, "http": a.http},
    }
    status, _, where = _get(f"{b.http}/api/v1/topologies?x=1", token)
    assert (status, where) == (307, f"{a.http}/api/v1/topologies?x=1")
    # the CLI through the standby: a write redirected is the leader's to allow or refuse
    viewer = Client(b.http, token).call("POST", "/api/v1/tokens", body={"role": "viewer"})
    with pytest.raises(HeadwaterError, match="refused the request"):
        Client(b.http, viewer["token"]).call("POST", "/api/v1/tokens", body={"role": "admin"})
    with pytest.raises(HeadwaterError, match="refused the request"):
        Client(b.http).call("POST", "/api/v1/tokens", body={"role": "admin"})
    assert not _leads(daemons, b)
    assert _get(f"{a.http}/api/v1/leader", token)[1]["epoch"] == 1
    # a worker given both masters' addresses (the standby's first) attaches to the leader
    request = urllib.request.Request(
        f"{a.http}/api/v1/tokens",
        data=json.dumps({"role": "worker"}).encode(),
        headers={"Authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        join = json.loads(r.read())["token"]
    daemons._spawn(
        [
            "worker",
            *("--master", f"{b.grpc},{a.grpc}", "--id", "w1"),
            *("--workdir", str(tmp_path / "w1"), "--join", join, "--isolation", "none"),
        ],
        "w1.log",
    )
    wait_for(lambda: _online(a, token, "w1"), 60, "the worker attached to the leader")

    assert a.proc is not None
    killed = time.monotonic()
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(10)
    wait_for(lambda: _leads(daemons, b), 30, "master b to lead")
    took = time.monotonic() - killed
    assert took < 10 + 5, took  # the session's 6 s, and the start of a leader on a busy host
    assert _get(f"{b.http}/api/v1/leader", token)[1] == {
        "role": "leader",
        "epoch": 2,
        "leader": {"grpc": b.grpc, "http": b.http},
    }
    wait_for(lambda: _online(b, token, "w1"), 60, "the worker attached to the new leader")
    # the new leader's order reaches the worker with its epoch, which the worker keeps
    package = topology_package(tmp_path, "after")
    request = urllib.request.Request(
        f"{b.http}/api/v1/topologies?entry=topo.py&containers=1",
        data=package,
        headers={"Authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        assert json.loads(r.read())["topology"] == "after"
    epoch_file = tmp_path / "w1" / "leader-epoch"
    wait_for(
        lambda: epoch_file.exists() and epoch_file.read_text() == "2\n",
        60,
        "the worker to obey leader epoch 2",
    )


def test_a_leader_cut_off_from_zookeeper_stops_leading_at_once(
    daemons: Daemons, pair: tuple[_Master, _Master, str], zookeeper: ZooKeeper
) -> None:
    a, b, token = pair
    assert a.proc is not None
    zookeeper.stop()  # the leader's link to ZooKeeper: gone
    a.proc.wait(30)  # it stops by itself, at once
    assert a.proc.returncode != 0
    said = (daemons.tmp / "a.log").read_text()
    assert "this master stops leading at once (leader epoch 1)" in said
    assert "this master stopped leading" in said
    assert not _leads(daemons, b)  # nobody leads without ZooKeeper
    zookeeper.start()  # back: b leads once a's session is over
    wait_for(lambda: _leads(daemons, b), 60, "master b to lead")
    assert _get(f"{b.http}/api/v1/leader", token)[1]["epoch"] == 2


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_standby_that_is_stopped_leaves_the_election_at_once(
    daemons: Daemons, pair: tuple[_Master, _Master, str], zookeeper: ZooKeeper, sig: int
) -> None:
    a, b, token = pair
    assert b.proc is not None
    b.proc.send_signal(sig)
    assert b.proc.wait(15) == 0  # before: Ctrl-C waited on the campaign's thread for ever
    assert "master stopping (it stood by)" in (daemons.tmp / "b.log").read_text()
    zk = KazooClient(
        hosts=zookeeper.hosts, auth_data=[("digest", "headwater-master:correct-horse")]
    )
    zk.start(timeout=15)
    try:
        members = zk.get_children("/hw/election")
        assert len(members) == 1  # a's: b's went with its session, not after its timeout
        raw, _ = zk.get(f"/hw/election/{members[0]}")
        assert json.loads(raw)["grpc"] == a.grpc
    finally:
        zk.stop()
        zk.close()
    assert _get(f"{a.http}/api/v1/leader", token)[1]["epoch"] == 1
