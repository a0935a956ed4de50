"""A node's side of enrolment and renewal: from a join token to a certificate.

``join`` reads the certificate the master presents on its join port (without
trusting it), refuses it unless its SHA-256 is the fingerprint the token
carries, and then asks for a certificate over TLS that trusts that CA alone:
a node that found its master by zeroconf, or was pointed at an impostor,
learns only an address from that, never whom to trust. The node's key never
leaves it: the master signs a CSR.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

from .._exceptions import HeadwaterError
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._ca import fingerprint, key_pem, new_key
from ._identity import MASTER_NAME, Credentials, Transport
from ._tokens import JoinToken

JOIN_TIMEOUT_S = 15.0


async def presented_certificate(host: str, port: int, timeout: float = JOIN_TIMEOUT_S) -> bytes:
    """The certificate a TLS server at ``host:port`` presents, unverified (PEM). On the event
    loop, not blocking it: a node stopped while the master is out of reach stops at once."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    async with asyncio.timeout(timeout):  # (3.11's wait_for can swallow a cancellation)
        _, writer = await asyncio.open_connection(host, port, ssl=ctx)
    try:
        tls = writer.get_extra_info("ssl_object")
        der = tls.getpeercert(binary_form=True) if tls is not None else None
    finally:  # only its certificate was wanted: no TLS goodbye to wait for
        writer.transport.abort()
        with contextlib.suppress(OSError):  # (lost with an error already: the same end)
            await writer.wait_closed()
    if der is None:
        raise HeadwaterError(f"{host}:{port} presented no certificate")
    return ssl.DER_cert_to_PEM_cert(der).encode()


def _csr(node_id: str) -> tuple[bytes, bytes]:
    key = new_key()
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node_id)]))
        .sign(key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM), key_pem(key)


async def join(host: str, token: JoinToken, node_id: str) -> Credentials:
    """Enrol ``node_id`` with the master at ``host`` (its join port is in the token)."""
    if not host:
        raise HeadwaterError("no master to enrol with: give --master HOST:PORT, or find one")
    try:
        ca = await presented_certificate(host, token.port)
    except OSError as exc:  # TimeoutError too
        why = str(exc) or f"no answer in {JOIN_TIMEOUT_S:g} s"
        raise HeadwaterError(
            f"cannot reach the master's join port {host}:{token.port}: {why}"
        ) from None
    if fingerprint(ca) != token.ca_fingerprint:
        raise HeadwaterError(
            f"the master at {host}:{token.port} is not the one the join token names (its CA "
            f"is {fingerprint(ca)}, the token's {token.ca_fingerprint}): refusing to enrol"
        )
    csr, key = _csr(node_id)
    options = [("grpc.ssl_target_name_override", MASTER_NAME)]
    creds = grpc.ssl_channel_credentials(ca)
    async with grpc.aio.secure_channel(f"{host}:{token.port}", creds, options=options) as ch:
        try:
            got = await pb_grpc.EnrolmentStub(ch).Join(
                pb.JoinRequest(token=token.token, node_id=node_id, csr=csr),
                timeout=JOIN_TIMEOUT_S,
            )
        except grpc.RpcError as exc:
            why = exc.details()
            raise HeadwaterError(f"the master refused to enrol {node_id!r}: {why}") from None
    if got.ca != ca:
        raise HeadwaterError("the master answered with another CA than it presents")
    return Credentials(ca, got.certificate, key)


async def renew(transport: Transport, master: str, node_id: str) -> Credentials:
    """A new certificate for this node's own identity, over its current mutual TLS link."""
    csr, key = _csr(node_id)
    async with transport.channel(master, to=MASTER_NAME) as ch:
        got = await pb_grpc.ClusterStub(ch).Renew(pb.RenewRequest(csr=csr), timeout=JOIN_TIMEOUT_S)
    current = transport.credentials()
    if got.ca != current.ca:
        raise HeadwaterError("the master renewed the certificate with another CA")
    return Credentials(current.ca, got.certificate, key)
