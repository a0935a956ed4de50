"""The master's side of node identity: enrolment, renewal and revocation.

A node enrols once with a join token (``Enrolment.join``): the token's role
and the node's id go into the certificate the cluster CA signs. An id is
enrolled once: a second node asking for it is refused until the first is
online: no one takes over a live node's id. An offline node's id may enrol
again (a gateway whose disk was replaced comes back under its id); revoke
the old one first if its disk was stolen. A node renews its own certificate over its mutual
TLS link (``renew``). A revoked node (``headwater nodes --revoke``) is cut
off: its link and calls are refused from then on, and every worker is told
so that their stream managers refuse it too. All of it is kept in the
master's state under ``tls/`` (``ca.pem``, ``ca.key``, ``revoked.json``, and a record per
enrolled node in ``enrolled/``: one write per join, however many nodes there are; a master's
older single record of them all, ``enrolled.json``, is moved into those once).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from headwater.common._exceptions import HeadwaterError
from headwater.common._ids import node_id_problem
from headwater.common.security import JOIN_ROLES, ClusterCA, Identity, TokenStore
from headwater.common.statemgr import StateError, StateManager, as_state
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

log = logging.getLogger("headwater.master")
NODES, REVOKED_FILE = "enrolled", "revoked.json"
OLD_NODES_FILE = "enrolled.json"  # every node in one record, rewritten at each join: N² writes


def _node_record(node_id: str) -> str:
    """An enrolled node's record: named so that no id is hidden as a temporary file (an id
    may start with '.' or end in '.tmp')."""
    return f"{NODES}/n-{node_id}.json"


class EnrolmentRefused(HeadwaterError):
    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code


class Enrolment:
    def __init__(
        self,
        where: str | Path | StateManager,
        tokens: TokenStore,
        online: Callable[[str], bool] = lambda node_id: False,
    ) -> None:
        """``where``: the ``tls`` folder, or the master's state seen under ``tls``."""
        self.online = online  # whether a node of this id is attached now
        self.ca = ClusterCA.open(where)
        self.state = as_state(where)
        self.tokens = tokens
        self._lock = threading.Lock()
        self.enrolled: dict[str, dict[str, Any]] = self._read_enrolled()
        self.revoked: set[str] = set(self._read(REVOKED_FILE, []))

    def _read_enrolled(self) -> dict[str, dict[str, Any]]:
        """Every enrolled node's record; the older single record moved into them first."""
        old = self._read(OLD_NODES_FILE, None)
        if isinstance(old, dict):
            for node_id, entry in old.items():
                if (
                    node_id_problem(node_id) is None
                    and self.state.get(_node_record(node_id)) is None
                ):
                    self.state.put(_node_record(node_id), json.dumps(entry).encode())
            self.state.delete(OLD_NODES_FILE)  # only once every node has its own
            log.info("moved the enrolled nodes' record into one record per node")
        out: dict[str, dict[str, Any]] = {}
        for name in self.state.children(NODES):
            if name.startswith("n-") and name.endswith(".json"):
                data = self.state.get(f"{NODES}/{name}")
                if data is not None:
                    out[name[2 : -len(".json")]] = json.loads(data.decode("utf-8"))
        return out

    def _read(self, name: str, empty: Any) -> Any:
        data = self.state.get(name)
        return json.loads(data.decode("utf-8")) if data is not None else empty

    def _write(self, name: str, value: Any) -> None:
        self.state.put(name, json.dumps(value, indent=1).encode())

    def join(self, token: str, node_id: str, csr: bytes) -> pb.Enrolled:
        """Sign ``csr`` for ``node_id`` with the role ``token`` grants; EnrolmentRefused if not."""
        record = self.tokens.check(token)
        if record is None:
            raise EnrolmentRefused(
                grpc.StatusCode.UNAUTHENTICATED,
                "the join token is not valid (unknown, revoked or expired): make a new one with "
                "`headwater token create --role agent|worker`",
            )
        if record.role not in JOIN_ROLES:
            raise EnrolmentRefused(
                grpc.StatusCode.PERMISSION_DENIED,
                f"a {record.role} token cannot enrol a node: make one with --role agent or worker",
            )
        problem = node_id_problem(node_id)
        if problem is not None:
            raise EnrolmentRefused(grpc.StatusCode.INVALID_ARGUMENT, problem)
        with self._lock:
            if node_id in self.revoked:
                raise EnrolmentRefused(
                    grpc.StatusCode.PERMISSION_DENIED, f"node {node_id!r} is revoked"
                )
            if node_id in self.enrolled and self.online(node_id):
                raise EnrolmentRefused(
                    grpc.StatusCode.ALREADY_EXISTS,
                    f"node id {node_id!r} is enrolled already and online; give this node "
                    "another --id (a node enrols again under its id only while it is offline)",
                )
            if node_id in self.enrolled:
                log.warning("node %s enrols again (it was offline)", node_id)
            cert = self._sign(csr, Identity(record.role, node_id))
            entry = {"role": record.role, "at": time.time(), "token": record.id}
            try:  # kept before the certificate is given
                self.state.put(_node_record(node_id), json.dumps(entry).encode())
            except StateError as exc:
                raise EnrolmentRefused(
                    grpc.StatusCode.UNAVAILABLE, f"the enrolment could not be kept: {exc}"
                ) from None
            self.enrolled[node_id] = entry
        log.info("enrolled %s %s (token %s)", record.role, node_id, record.id)
        return pb.Enrolled(certificate=cert, ca=self.ca.cert_pem)

    def renew(self, identity: Identity, csr: bytes) -> pb.Enrolled:
        if self.refusal(identity) is not None or identity.role not in JOIN_ROLES:
            raise EnrolmentRefused(
                grpc.StatusCode.PERMISSION_DENIED, f"{identity} may not renew a certificate"
            )
        cert = self._sign(csr, identity)
        log.info("renewed the certificate of %s", identity)
        return pb.Enrolled(certificate=cert, ca=self.ca.cert_pem)

    def _sign(self, csr: bytes, identity: Identity) -> bytes:
        try:
            return self.ca.sign(csr, identity)
        except HeadwaterError as exc:
            raise EnrolmentRefused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None

    def refusal(self, identity: Identity) -> str | None:
        """Why a node of this identity is refused (revoked), or None."""
        if identity.name in self.revoked and identity.role in JOIN_ROLES:
            return f"node {identity.name!r} is revoked"
        return None

    def revoke(self, node_id: str) -> None:
        with self._lock:
            self.revoked.add(node_id)
            self._write(REVOKED_FILE, sorted(self.revoked))
        log.warning("revoked node %s: its links are refused from now on", node_id)

    def forget(self, node_id: str) -> None:
        """Free a forgotten node's id for a new enrolment (a revoked id stays revoked)."""
        with self._lock:
            if self.enrolled.pop(node_id, None) is not None:
                self.state.delete(_node_record(node_id))


class EnrolmentService(pb_grpc.EnrolmentServicer):
    """``Join`` on the master's join port (server-only TLS: the caller has no certificate)."""

    def __init__(self, enrolment: Enrolment) -> None:
        self.enrolment = enrolment

    async def Join(self, request: pb.JoinRequest, context: Any) -> pb.Enrolled:
        try:
            return self.enrolment.join(request.token, request.node_id, request.csr)
        except EnrolmentRefused as exc:
            await context.abort(exc.code, str(exc))
        raise AssertionError("unreachable")


def join_token_on_host(
    state_dir: str | Path, role: str, ready: dict[str, Any], ttl_s: float
) -> str:
    """A join token made on the master's host, from its state folder and its ready file (what
    ``headwater demo`` and the benches do; an operator uses ``headwater token create``)."""
    from headwater.common.security import JoinToken

    raw = TokenStore(Path(state_dir) / "tokens.json").create(role, ttl_s, "made on the host")
    return str(JoinToken(int(ready["join_port"]), raw, str(ready["ca_fingerprint"])))
