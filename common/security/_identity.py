"""Who a process is on the cluster's gRPC links, and how it speaks on them.

Every gRPC link is mutual TLS with certificates from the cluster CA
(``_ca.py``). A certificate's common name is ``ROLE:NAME`` (``Identity``):
the master is ``master:master``, a node ``agent:ID`` or ``worker:ID``; a
container speaks with its node's certificate. The server side reads the
caller's identity from the handshake (``peer_identity``) and authorises by
it; the client side checks the server's certificate against the CA and the
name every server of its kind carries (``server_names``: a worker serves as
``headwater-worker``, an agent as ``headwater-agent``, the master as
``headwater-master``).

``Transport`` is the one place channels are opened and ports bound. Built
from a folder of credentials (``ca.pem``, ``node.pem``, ``node.key``) it
speaks mutual TLS; ``Transport.insecure()`` speaks plaintext and exists for
development only (``--insecure``), where every caller is taken on trust.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._exceptions import HeadwaterError
from ._files import write_private

if TYPE_CHECKING:  # imported where a link is made: making credentials (headwater run's) needs none
    import grpc

MASTER_NAME = "headwater-master"
"""The name the master's certificate carries and every node checks."""
WORKER_NAME = "headwater-worker"
"""The name every worker's certificate carries: its stream managers serve peers and uplinks."""
AGENT_NAME = "headwater-agent"
"""The name every agent's certificate carries: it serves its own edge containers."""


def server_names(role: str) -> list[str]:
    """The names a certificate of ``role`` carries (a client checks the one it expects, so an
    agent's certificate cannot pose as a worker's stream manager, nor a worker's as the master)."""
    if role == "local":  # ``headwater run``: one process tree plays every part
        return [MASTER_NAME, WORKER_NAME, AGENT_NAME]
    return [f"headwater-{role}"]


ROLES = ("master", "worker", "agent", "local")
CERT_FILE, KEY_FILE, CA_FILE = "node.pem", "node.key", "ca.pem"
REVOKED_FILE = "revoked.json"
TLS_DIR = "tls"
"""Where a node keeps its credentials, inside its workdir."""


@dataclass(frozen=True)
class Identity:
    role: str
    name: str

    def __str__(self) -> str:
        return f"{self.role}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> Identity | None:
        role, sep, name = text.partition(":")
        return cls(role, name) if sep and role in ROLES and name else None


TRUSTED = Identity("insecure", "*")
"""The caller of a server without TLS (``--insecure``): taken on trust."""


@functools.lru_cache(maxsize=1024)
def cert_identity(cert_pem: bytes) -> Identity | None:
    """The identity a certificate names (kept for the last thousand certificates: every gRPC
    call a node makes names its caller by its certificate, and parsing one costs ~0.2 ms)."""
    from cryptography import x509  # loaded when a certificate is read, not by every process
    from cryptography.x509.oid import NameOID

    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    value = names[0].value if names else ""
    return Identity.parse(value if isinstance(value, str) else value.decode())


@dataclass(frozen=True)
class Credentials:
    ca: bytes
    cert: bytes
    key: bytes

    @property
    def identity(self) -> Identity | None:
        return cert_identity(self.cert)

    def not_after(self) -> float:
        """When the certificate expires (epoch seconds)."""
        from cryptography import x509

        return x509.load_pem_x509_certificate(self.cert).not_valid_after_utc.timestamp()

    def not_before(self) -> float:
        from cryptography import x509

        return x509.load_pem_x509_certificate(self.cert).not_valid_before_utc.timestamp()

    @classmethod
    def load(cls, folder: str | Path) -> Credentials:
        folder = Path(folder)
        try:
            return cls(
                (folder / CA_FILE).read_bytes(),
                (folder / CERT_FILE).read_bytes(),
                (folder / KEY_FILE).read_bytes(),
            )
        except FileNotFoundError as exc:
            raise HeadwaterError(
                f"no credentials in {folder} ({exc.filename} is missing): enrol the node with "
                "--join TOKEN (`headwater token create` on the master's host makes one)"
            ) from None

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        write_private(folder / CA_FILE, self.ca)
        write_private(folder / KEY_FILE, self.key)
        write_private(folder / CERT_FILE, self.cert)  # last: its presence means enrolled


def has_credentials(folder: str | Path) -> bool:
    return (Path(folder) / CERT_FILE).exists()


def peer_identity(context: Any) -> Identity | None:
    """The identity the caller's certificate names (None: no certificate, or a foreign one)."""
    auth = context.auth_context()
    pems = auth.get("x509_pem_cert") or []
    if not pems:
        return None
    return cert_identity(pems[0])


class Transport:
    """How this process opens gRPC channels and binds gRPC ports: mutual TLS with its
    credentials (read again from ``folder`` when they change: a node renews them), or
    plaintext when insecure."""

    def __init__(self, folder: str | Path | None, fixed: Credentials | None = None) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._fixed = fixed
        self._loaded: tuple[float, Credentials] | None = None
        self._revoked: tuple[float, frozenset[str]] = (0.0, frozenset())

    @classmethod
    def insecure(cls) -> Transport:
        return cls(None)

    @classmethod
    def of(cls, credentials: Credentials) -> Transport:
        """A transport with credentials held in memory (the master's)."""
        return cls(None, credentials)

    @property
    def secure(self) -> bool:
        return self.folder is not None or self._fixed is not None

    def args(self) -> list[str]:
        """The command-line arguments that give a child process this transport."""
        return ["--tls-dir", str(self.folder)] if self.folder is not None else ["--insecure"]

    def credentials(self) -> Credentials:
        if self._fixed is not None:
            return self._fixed
        assert self.folder is not None, "an insecure transport has no credentials"
        mtime = (self.folder / CERT_FILE).stat().st_mtime
        if self._loaded is None or self._loaded[0] != mtime:
            self._loaded = (mtime, Credentials.load(self.folder))
        return self._loaded[1]

    def revoked(self, identity: Identity) -> bool:
        """Whether the cluster has cut ``identity``'s node off (the list its node keeps in
        ``revoked.json`` beside the credentials, as the master sends it)."""
        if self.folder is None:
            return False
        path = self.folder / REVOKED_FILE
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return False
        if mtime != self._revoked[0]:
            try:
                ids = frozenset(json.loads(path.read_text("utf-8")))
            except (OSError, ValueError):
                ids = self._revoked[1]  # being rewritten: the last list read
            self._revoked = (mtime, ids)
        return identity.name in self._revoked[1]

    def channel(
        self, address: str, to: str, options: Sequence[tuple[str, Any]] = ()
    ) -> grpc.aio.Channel:
        """A channel to ``address``, whose certificate must name ``to``."""
        import grpc

        if not self.secure:
            return grpc.aio.insecure_channel(address, options=list(options))
        c = self.credentials()
        creds = grpc.ssl_channel_credentials(c.ca, c.key, c.cert)
        opts = [*options, ("grpc.ssl_target_name_override", to)]
        return grpc.aio.secure_channel(address, creds, options=opts)

    def bind(
        self,
        server: grpc.aio.Server,
        address: str,
        require_client: bool = True,
        option: str | None = None,
    ) -> int:
        """Bind ``server`` (one from ``grpc_server``: the port is its alone) to ``address``;
        the port. ``require_client=False``: callers without a certificate get through the
        handshake (only the master, for enrolment) and each service refuses them itself.
        A taken port raises ``PortInUse``, whose advice names ``option``."""
        import grpc

        from .._ports import bind_grpc

        if not self.secure:
            return bind_grpc(server, address, option=option)
        c = self.credentials()
        creds = grpc.ssl_server_credentials(
            [(c.key, c.cert)], root_certificates=c.ca, require_client_auth=require_client
        )
        return bind_grpc(server, address, creds, option)

    def identity(self, context: Any) -> Identity | None:
        """The caller's identity (``TRUSTED`` for everyone when insecure)."""
        return peer_identity(context) if self.secure else TRUSTED

    def refusal(self, context: Any, roles: Collection[str]) -> str | None:
        """Why the caller may not use a service meant for ``roles``, or None if it may."""
        identity = self.identity(context)
        if identity == TRUSTED:
            return None
        if identity is None:
            return "no valid cluster certificate"
        if identity.role not in roles:
            return f"{identity} may not use this service"
        if self.revoked(identity):
            return f"{identity} is revoked"
        return None
