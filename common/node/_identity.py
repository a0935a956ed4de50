"""A node's identity: its id and workdir lock, and its certificate (enrolled for, renewed).

A node's id (unless ``--id`` names one) is generated once and kept in its
workdir (``node-id``): a restart with the same workdir is the same node. Two
live nodes may not share a workdir (it is locked).

A node speaks to the master, and its containers to everyone, with the
certificate it got when it enrolled (``WORKDIR/tls``): started with
``--join TOKEN`` and no certificate yet, it enrols first (common/security/
_enrol.py); it renews the certificate once a third of its life is left. A
certificate that names another node is refused, or replaced when a token is
given (``NodeCredentials``). This module never imports the node: it is given
the node's id, a way to read the master's address, its health and its backoff.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc

from .._exceptions import HeadwaterError
from .._health import FAILED, Health
from .._retry import RetryPolicy
from ..security import Credentials, Identity, JoinToken, Transport, has_credentials
from ..security._enrol import join, renew
from ..security._identity import TLS_DIR
from ._leader import NEXT_MASTER_S

log = logging.getLogger("headwater.node")
ID_FILE = "node-id"
LOCK_FILE = "node.lock"
RENEW_CHECK_S = 3600.0  # how often a node looks at its certificate's age


def node_identity(workdir: str | Path, kind: str, given: str | None = None) -> str:
    """The node id kept in ``workdir``: ``given`` if named, else the one generated there before,
    else a new ``KIND-HOST-XXXXXXXX`` written (synced) for every later start."""
    path = Path(workdir) / ID_FILE
    if given:
        return given
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    path.parent.mkdir(parents=True, exist_ok=True)
    host = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname().split(".")[0])[:40] or "host"
    new = f"{kind}-{host}-{uuid.uuid4().hex[:8]}"  # a node id (common/_ids.py)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new + "\n")
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    log.info("generated node id %s (kept in %s)", new, path)
    return new


def lock_workdir(workdir: Path) -> int:
    """Hold ``workdir`` for this process (released when it exits, even by SIGKILL)."""
    fd = os.open(workdir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)  # the node's alone: a topology's code could hold it otherwise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise HeadwaterError(
            f"workdir {workdir} is in use by another node; give each node its own --workdir"
        ) from None
    return fd


class NodeCredentials:
    """A node's certificate in ``WORKDIR/tls`` and the transport that uses it: checked when the
    node starts, enrolled for with the join token, renewed in time."""

    def __init__(
        self,
        workdir: Path,
        kind: str,
        node_id: str,
        master: Callable[[], str],
        *,
        insecure: bool = False,
        join_token: JoinToken | None = None,
    ) -> None:
        self.node_id = node_id
        self.master = master  # the master's address, as the node last knew it
        self.tls_dir = workdir / TLS_DIR
        self.transport = Transport.insecure() if insecure else Transport(self.tls_dir)
        self.join_token = join_token
        if self.transport.secure and has_credentials(self.tls_dir):
            held = Credentials.load(self.tls_dir).identity
            if held != Identity(kind, node_id):
                if join_token is None:
                    raise HeadwaterError(
                        f"the certificate in {self.tls_dir} names {held}, but this node is "
                        f"{kind} {node_id!r}: give it the id it enrolled with, or enrol "
                        "it again with --join TOKEN"
                    )
                log.warning("the certificate names %s, not this node: enrolling again", held)
                shutil.rmtree(self.tls_dir)
        if self.transport.secure and join_token is None and not has_credentials(self.tls_dir):
            raise HeadwaterError(
                f"this node is not enrolled (no certificate in {self.tls_dir}): start it once "
                "with --join TOKEN (`headwater token create --role "
                f"{kind}` on the master's host prints one)"
            )

    async def refresh(self) -> None:
        """Enrol if this node has no certificate yet; renew one with a third of its life left."""
        if not self.transport.secure:
            return
        master = self.master()
        if not has_credentials(self.tls_dir):
            assert self.join_token is not None
            host = master.rpartition(":")[0] or master
            creds = await join(host, self.join_token, self.node_id)
            creds.save(self.tls_dir)
            log.info("enrolled as %s; the certificate is in %s", creds.identity, self.tls_dir)
            return
        creds = self.transport.credentials()
        life = creds.not_after() - creds.not_before()
        if creds.not_after() - time.time() < life / 3:
            renewed = await renew(self.transport, master, self.node_id)
            renewed.save(self.tls_dir)
            log.info("renewed this node's certificate (it expired at %s)", creds.not_after())

    async def enrol(
        self, backoff: RetryPolicy, health: Health, failed: Callable[[], bool] = lambda: True
    ) -> None:
        """Enrol now if this node has no certificate yet, trying until it has one (said in
        ``health`` meanwhile); at once if it has one. ``failed``: called after each failure
        (of several masters, the next is tried: a standby does not enrol); whether to back
        off before the next try (a round of them failed) or try at once."""
        retry = backoff.start()
        while self.transport.secure and not has_credentials(self.tls_dir):
            try:
                await self.refresh()
            except (HeadwaterError, grpc.RpcError, OSError) as exc:
                why = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)
                health.set("master", FAILED, f"cannot enrol: {why}")
                log.error("cannot enrol: %s", why)
                await asyncio.sleep(retry.next_delay() if failed() else NEXT_MASTER_S)

    async def renewing(self) -> None:
        """Renew the certificate in time on a session that lasts (a new session checks too)."""
        while True:
            await asyncio.sleep(RENEW_CHECK_S)
            if not self.transport.secure or not has_credentials(self.tls_dir):
                continue
            try:
                await self.refresh()
            except (HeadwaterError, grpc.RpcError, OSError) as exc:
                why = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)
                log.warning("cannot renew this node's certificate yet: %s", why)
