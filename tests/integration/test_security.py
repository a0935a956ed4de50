"""The cluster's identities on real processes: a master, workers, agents and callers
holding good, foreign, borrowed or no certificates (issue 15)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest

from headwater.common._exceptions import HeadwaterError
from headwater.common.security import (
    MASTER_NAME,
    ClusterCA,
    Credentials,
    Identity,
    JoinToken,
    TokenStore,
    Transport,
)
from headwater.common.security._enrol import join, renew
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._daemons import Daemons
from ._support import wait_for

pytestmark = pytest.mark.cluster


def _ca(daemons: Daemons) -> ClusterCA:
    return ClusterCA.open(daemons.tmp / "master" / "tls", create=False)


def _call(address: str, creds: Credentials | None, rpc: str, request: Any) -> Any:
    """One unary call to the master's Cluster service with ``creds`` (None: no certificate);
    its answer, or the grpc.RpcError."""

    async def go() -> Any:
        ca = creds.ca if creds is not None else _CA_OF[address]
        channel_creds = (
            grpc.ssl_channel_credentials(creds.ca, creds.key, creds.cert)
            if creds is not None
            else grpc.ssl_channel_credentials(ca)
        )
        options = [("grpc.ssl_target_name_override", MASTER_NAME)]
        async with grpc.aio.secure_channel(address, channel_creds, options=options) as ch:
            stub = pb_grpc.ClusterStub(ch)
            try:
                if rpc == "Attach":
                    async for command in stub.Attach(request, timeout=5):
                        return command
                    return None
                return await getattr(stub, rpc)(request, timeout=5)
            except grpc.RpcError as exc:
                return exc

    return asyncio.run(go())


_CA_OF: dict[str, bytes] = {}


def _code(answer: Any) -> grpc.StatusCode | None:
    return answer.code() if isinstance(answer, grpc.RpcError) else None


def _post(daemons: Daemons, path: str) -> Any:
    req = urllib.request.Request(
        f"{daemons.http}{path}",
        method="POST",
        headers={"Authorization": f"Bearer {daemons.token}"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_no_certificate_or_a_foreign_one_reaches_nothing(daemons: Daemons) -> None:
    daemons.start_master()
    _CA_OF[daemons.grpc] = _ca(daemons).cert_pem
    foreign = ClusterCA.create().issue(Identity("worker", "w9"))
    for creds in (None, foreign):
        for rpc, request in (
            ("Attach", pb.NodeInfo(node_id="w9", kind="worker")),
            ("FetchPackage", pb.PackageRequest(package="sha256:" + "0" * 64)),
            ("ReportStatus", pb.NodeStatus(node_id="w9")),
            ("LocateReceiver", pb.ReceiverQuery(topology="iot", component="src")),
        ):
            # the handshake itself fails: no certificate of this cluster, no call
            assert _code(_call(daemons.grpc, creds, rpc, request)) == grpc.StatusCode.UNAVAILABLE
    assert daemons.api("/api/v1/nodes") == []


def test_a_certificate_speaks_for_its_own_node_only(daemons: Daemons) -> None:
    daemons.start_master()
    daemons.start_worker("w1")
    wait_for(lambda: daemons.api("/api/v1/nodes"), 30, "w1 to attach")
    ca = _ca(daemons)
    gw_a = ca.issue(Identity("agent", "gw-a"))
    denied = grpc.StatusCode.PERMISSION_DENIED
    # another agent's id, a worker's id, the worker kind: refused
    for info in (
        pb.NodeInfo(node_id="gw-b", kind="agent"),
        pb.NodeInfo(node_id="w1", kind="worker"),
        pb.NodeInfo(node_id="gw-a", kind="worker"),
    ):
        assert _code(_call(daemons.grpc, gw_a, "Attach", info)) == denied
    assert _code(_call(daemons.grpc, gw_a, "ReportStatus", pb.NodeStatus(node_id="w1"))) == denied
    # a package it was not given, a receiver of a topology it does not run
    answer = _call(
        daemons.grpc, gw_a, "FetchPackage", pb.PackageRequest(package="sha256:" + "1" * 64)
    )
    assert _code(answer) == denied
    query = pb.ReceiverQuery(topology="iot", component="src")
    assert _code(_call(daemons.grpc, gw_a, "LocateReceiver", query)) == denied
    # as itself it attaches (and is given nothing)
    node_ids = [n["id"] for n in daemons.api("/api/v1/nodes")]
    assert node_ids == ["w1"]
    # a live worker's id cannot be taken by enrolling again under it
    token = JoinToken.parse(daemons.join_token("worker"))
    host = daemons.grpc.rpartition(":")[0]
    with pytest.raises(HeadwaterError, match="enrolled already and online"):
        asyncio.run(join(host, token, "w1"))


def test_an_expired_or_foreign_join_token_enrols_no_one(daemons: Daemons) -> None:
    daemons.start_master()
    store = TokenStore(daemons.tmp / "master" / "tokens.json")
    raw = store.create("agent", ttl_s=0.001)
    record = store.check(raw, now=0)
    assert record is not None and record.expires is not None
    wait_for(lambda: time.time() > record.expires, 5, "the token to expire")  # type: ignore[operator]
    host = daemons.grpc.rpartition(":")[0]
    expired = JoinToken(daemons.join_port, raw, daemons.ca_fingerprint)
    with pytest.raises(HeadwaterError, match="not valid"):
        asyncio.run(join(host, expired, "gw-late"))
    viewer = JoinToken(daemons.join_port, store.create("viewer"), daemons.ca_fingerprint)
    with pytest.raises(HeadwaterError, match="cannot enrol"):
        asyncio.run(join(host, viewer, "gw-viewer"))
    # an agent started with it says why and never attaches
    daemons.start_agent("gw-late", "--master", daemons.grpc, "--join", str(expired))
    log = daemons.tmp / "gw-late.log"
    wait_for(lambda: log.exists() and "cannot enrol" in log.read_text(), 30, "the refusal")
    assert daemons.api("/api/v1/nodes") == []
    assert not (daemons.tmp / "gw-late" / "tls" / "node.pem").exists()


def test_a_revoked_node_is_cut_off(daemons: Daemons) -> None:
    daemons.start_master()
    daemons.start_worker("w1")
    daemons.start_worker("w2")

    def online() -> set[str]:
        return {n["id"] for n in daemons.api("/api/v1/nodes") if n["online"]}

    wait_for(lambda: online() == {"w1", "w2"}, 30, "both workers to attach")
    assert _post(daemons, "/api/v1/nodes/w2/revoke") == {"revoked": "w2"}
    # its session ends at once, and it cannot attach again
    wait_for(lambda: online() == {"w1"}, 10, "w2 to be cut off")
    log = daemons.tmp / "w2.log"
    wait_for(lambda: "the master refuses this node" in log.read_text(), 30, "w2 to be refused")
    assert online() == {"w1"}
    # every worker keeps the list its stream managers refuse by
    kept = daemons.tmp / "w1" / "tls" / "revoked.json"
    wait_for(lambda: kept.exists() and json.loads(kept.read_text()) == ["w2"], 10, "the list")
    creds = Credentials.load(daemons.tmp / "w2" / "tls")
    assert creds.identity == Identity("worker", "w2")
    _CA_OF[daemons.grpc] = creds.ca
    answer = _call(daemons.grpc, creds, "ReportStatus", pb.NodeStatus(node_id="w2"))
    assert _code(answer) == grpc.StatusCode.UNAUTHENTICATED


def test_an_agent_refuses_a_master_found_by_zeroconf_that_its_token_does_not_name(
    daemons: Daemons, netns_pair: tuple[str, str], tmp_path: Path
) -> None:
    master_ns, agent_ns = netns_pair
    daemons.start_master(host="10.250.0.1", netns=master_ns)  # advertises itself
    # the token names another cluster's CA: whoever answers at the address zeroconf found
    # is not the master the token was made for
    other = ClusterCA.open(tmp_path / "other-cluster")
    raw = TokenStore(tmp_path / "other-cluster" / "tokens.json").create("agent")
    token = JoinToken(daemons.join_port, raw, other.fingerprint)
    daemons.start_agent("gw-south", "--join", str(token), netns=agent_ns)  # no --master
    log = daemons.tmp / "gw-south.log"
    wait_for(
        lambda: log.exists() and "is not the one the join token names" in log.read_text(),
        60,
        "the agent to refuse the master it found",
    )
    assert "found the master at 10.250.0.1:" in log.read_text()
    assert daemons.api("/api/v1/nodes") == []
    assert not (daemons.tmp / "gw-south" / "tls" / "node.pem").exists()


def test_a_node_renews_its_own_certificate_and_no_one_elses(daemons: Daemons) -> None:
    daemons.start_master()
    daemons.start_worker("w1")
    wait_for(lambda: daemons.api("/api/v1/nodes"), 30, "w1 to attach")
    transport = Transport(daemons.tmp / "w1" / "tls")
    old = transport.credentials()
    renewed = asyncio.run(renew(transport, daemons.grpc, "w1"))
    assert renewed.identity == Identity("worker", "w1") and renewed.cert != old.cert
    assert renewed.ca == old.ca
    # whatever its CSR asks, the new certificate names the caller
    assert asyncio.run(renew(transport, daemons.grpc, "w2")).identity == Identity("worker", "w1")
