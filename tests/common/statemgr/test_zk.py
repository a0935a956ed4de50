"""ZooKeeper's backend beyond the contract: its ACL, its credentials, a lost connection, and
``open_state``'s refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from headwater.common.security import TokenStore
from headwater.common.statemgr import (
    LocalStateManager,
    Record,
    StateDenied,
    StateError,
    StateUnavailable,
    ZkStateManager,
    open_state,
    parse_zk,
)
from headwater.common.statemgr._open import AUTH_HINT
from headwater.common.statemgr._zk_chunks import CHUNK_BYTES

from ..._wait import wait_for
from ..._zookeeper import ZooKeeper

pytestmark = pytest.mark.zookeeper


def _auth(tmp_path: Path, text: str = "master:pw-one", mode: int = 0o600) -> Path:
    path = tmp_path / "zk.auth"
    path.write_text(text + "\n")
    os.chmod(path, mode)
    return path


def test_open_state_picks_the_backend_and_refuses_anything_else(
    zookeeper: ZooKeeper, tmp_path: Path
) -> None:
    local = open_state(str(tmp_path / "made"))
    assert isinstance(local, LocalStateManager) and (tmp_path / "made").is_dir()
    zk = open_state(zookeeper.url("hw"), _auth(tmp_path))
    try:
        assert isinstance(zk, ZkStateManager)
        assert zk.describe("tokens.json") == f"zk://{zookeeper.hosts}/hw/tokens.json"
    finally:
        zk.close()
    with pytest.raises(StateError) as err:
        open_state(zookeeper.url("hw"))
    assert str(err.value) == AUTH_HINT
    with pytest.raises(StateError) as err:
        open_state("s3://bucket/x")
    assert str(err.value) == (
        "--state 's3://bucket/x' is not a state: give a folder (local files) or "
        "zk://HOST:PORT[,HOST:PORT...]/CHROOT (ZooKeeper), e.g. zk://zk1:2181,zk2:2181/headwater"
    )


def test_the_url_gives_hosts_ports_and_a_chroot() -> None:
    assert str(parse_zk("zk://a,b:2182/x/y/")) == "zk://a:2181,b:2182/x/y"
    assert str(parse_zk("zk://[::1]:2181")) == "zk://[::1]:2181/headwater"
    for bad in ("zk://a:99999/x", "zk://a b/x", "zk://a/../x", "zk://,a/x"):
        with pytest.raises(StateError):
            parse_zk(bad)


def test_the_auth_file_must_be_the_owners_alone_and_user_colon_password(tmp_path: Path) -> None:
    url = "zk://127.0.0.1:1/hw"  # refused before any connection is tried
    with pytest.raises(StateError) as err:
        open_state(url, _auth(tmp_path, mode=0o644))
    assert "may be read by others" in str(err.value) and "chmod 600" in str(err.value)
    with pytest.raises(StateError) as err:
        open_state(url, _auth(tmp_path, "no-colon"))
    assert "must hold one line, user:password" in str(err.value)
    with pytest.raises(StateError) as err:
        open_state(url, tmp_path / "missing")
    assert "cannot read it" in str(err.value)


def test_a_client_without_the_credentials_can_neither_read_nor_write(
    zookeeper: ZooKeeper, tmp_path: Path
) -> None:
    state = ZkStateManager(zookeeper.hosts, "/hw", "master", "pw-one")
    state.put("tls/ca.key", b"-----BEGIN PRIVATE KEY-----")
    state.put("tokens.json", b"x" * (CHUNK_BYTES + 1))  # its chunks too
    anonymous = KazooClient(hosts=zookeeper.hosts)
    anonymous.start(timeout=15)
    try:
        for node in ("/hw", "/hw/tls/ca.key", "/hw/tokens.json"):
            with pytest.raises(NoAuthError):
                anonymous.get(node)
        for node in ("/hw", "/hw/tls", "/hw/tokens.json"):  # nor list them (the chunks)
            with pytest.raises(NoAuthError):
                anonymous.get_children(node)
        with pytest.raises(NoAuthError):
            anonymous.create("/hw/intruder", b"x")
        with pytest.raises(NoAuthError):
            anonymous.set("/hw/tls/ca.key", b"x")
        with pytest.raises(NoAuthError):
            anonymous.delete("/hw/tls/ca.key")
    finally:
        anonymous.stop()
        anonymous.close()
    with pytest.raises(StateDenied) as err:  # another identity is refused at once
        ZkStateManager(zookeeper.hosts, "/hw", "master", "wrong")
    assert str(err.value) == (
        f"ZooKeeper refused the list of zk://{zookeeper.hosts}/hw: its ACL is for another "
        "identity; give the master's ZooKeeper credentials (user:password) with "
        "--state-auth-file"
    )
    assert state.get("tls/ca.key") == b"-----BEGIN PRIVATE KEY-----"
    state.close()


def test_a_put_zookeeper_did_not_acknowledge_raises_and_kazoo_reconnects(
    zookeeper: ZooKeeper,
) -> None:
    state = ZkStateManager(zookeeper.hosts, "/hw", "master", "pw-one", timeout=3)
    try:
        state.put("deployments.json", b"[1]")
        tokens = TokenStore(Record(state, "tokens.json"))
        viewer = tokens.create("viewer")
        zookeeper.stop()
        wait_for(lambda: not state.client.connected, 15, "the client to see the loss")
        checked = tokens.check(viewer)  # the tokens last read go on answering
        assert checked is not None and checked.role == "viewer"
        with pytest.raises(StateUnavailable):  # a new one is not made unless it is kept
            tokens.create("viewer")
        assert [r.role for r in tokens.records()] == ["viewer"]
        with pytest.raises(StateUnavailable) as err:
            state.put("deployments.json", b"[1, 2]")
        assert str(err.value).startswith(
            f"the save of zk://{zookeeper.hosts}/hw/deployments.json was not made: ZooKeeper "
            "is not connected ("
        )
        with pytest.raises(StateUnavailable):
            state.get("deployments.json")
        zookeeper.start()  # the same server back, with its data
        wait_for(lambda: state.client.connected, 30, "kazoo to reconnect")
        assert state.get("deployments.json") == b"[1]"
        state.put("deployments.json", b"[1, 2]")
        assert state.get("deployments.json") == b"[1, 2]"
    finally:
        state.close()


def test_a_server_that_is_not_there_is_said_within_the_deadline(tmp_path: Path) -> None:
    from ..._ports import free_port

    port = free_port()
    with pytest.raises(StateUnavailable) as err:
        open_state(f"zk://127.0.0.1:{port}/hw", _auth(tmp_path), timeout=2)
    assert str(err.value).startswith(f"cannot reach ZooKeeper at 127.0.0.1:{port} within ")


def test_processes_on_local_files_never_load_kazoo(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from headwater.cloud.master._main import serve\n"
        "from headwater.common.statemgr import open_state\n"
        f"state = open_state({str(tmp_path / 's')!r})\n"
        "state.put('tokens.json', b'[]')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kazoo'))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == "[]\n"
