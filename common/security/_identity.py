"""Who a process is on the cluster's gRPC links, and how it speaks on them.

Every gRPC link is mutual TLS with certificates from the cluster CA
(``_ca.py``). A certificate's common name is ``ROLE:NAME`` (``Identity``):
the master is ``master:master``, a node ``agent:ID`` or ``worker:ID``; a
container speaks with its node's certificate. The server side reads the
caller's identity from the handshake (``peer_identity``) and authorises by
it; the client side checks the server's certificate against the CA and the
name every server of its kind carries (``MASTER_NAME`` or ``NODE_NAME``).

``Transport`` is the one place channels are opened and ports bound. Built
from a folder of credentials (``ca.pem``, ``node.pem``, ``node.key``) it
speaks mutual TLS; ``Transport.insecure()`` speaks plaintext and exists for
development only (``--insecure``), where every caller is taken on trust.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID

from .._exceptions import HeadwaterError
from ._files import write_private

MASTER_NAME = "headwater-master"
"""The name the master's certificate carries and every node checks."""
NODE_NAME = "headwater-node"
"""The name every node's certificate carries (stream managers serve peers and agents with it)."""
ROLES = ("master", "worker", "agent", "local")
CERT_FILE, KEY_FILE, CA_FILE = "node.pem", "node.key", "ca.pem"
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


def cert_identity(cert_pem: bytes) -> Identity | None:
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
        return x509.load_pem_x509_certificate(self.cert).not_valid_after_utc.timestamp()

    def not_before(self) -> float:
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

    def __init__(self, folder: str | Path | None) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._loaded: tuple[float, Credentials] | None = None

    @classmethod
    def insecure(cls) -> Transport:
        return cls(None)

    @property
    def secure(self) -> bool:
        return self.folder is not None

    def args(self) -> list[str]:
        """The command-line arguments that give a child process this transport."""
        return ["--tls-dir", str(self.folder)] if self.folder is not None else ["--insecure"]

    def credentials(self) -> Credentials:
        assert self.folder is not None
        mtime = (self.folder / CERT_FILE).stat().st_mtime
        if self._loaded is None or self._loaded[0] != mtime:
            self._loaded = (mtime, Credentials.load(self.folder))
        return self._loaded[1]

    def channel(
        self, address: str, to: str = NODE_NAME, options: Sequence[tuple[str, Any]] = ()
    ) -> grpc.aio.Channel:
        """A channel to ``address``, whose certificate must name ``to``."""
        if self.folder is None:
            return grpc.aio.insecure_channel(address, options=list(options))
        c = self.credentials()
        creds = grpc.ssl_channel_credentials(c.ca, c.key, c.cert)
        opts = [*options, ("grpc.ssl_target_name_override", to)]
        return grpc.aio.secure_channel(address, creds, options=opts)

    def bind(self, server: grpc.aio.Server, address: str, require_client: bool = True) -> int:
        """Bind ``server`` to ``address``; the port. ``require_client=False``: callers without a
        certificate get through the handshake (only the master, for enrolment) and each
        service refuses them itself."""
        if self.folder is None:
            return int(server.add_insecure_port(address))
        c = self.credentials()
        creds = grpc.ssl_server_credentials(
            [(c.key, c.cert)], root_certificates=c.ca, require_client_auth=require_client
        )
        return int(server.add_secure_port(address, creds))

    def identity(self, context: Any) -> Identity | None:
        """The caller's identity (``TRUSTED`` for everyone when insecure)."""
        return TRUSTED if self.folder is None else peer_identity(context)
