"""The cluster's certificate authority: one key pair that signs every node's certificate.

The master creates it on its first start (or ``headwater init``) in its state
(``tls/ca.pem``, ``tls/ca.key``: files of mode 0600 in a folder of mode 0700, or
znodes under the master's ZooKeeper ACL) and never lets the key out.
The CA certificate is also the master's own TLS certificate: a node that
enrols has nothing but a join token, which names the CA by its SHA-256
fingerprint; it reads the certificate the master presents, checks the
fingerprint, and from then on trusts that certificate alone (``_enrol.py``).

A node's certificate names it in its common name as ``ROLE:ID``
(``agent:gw-north``); the master fills that in from the join token's role and
the node id, whatever the node's CSR asked for.
"""

from __future__ import annotations

import datetime
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .._exceptions import HeadwaterError
from ..statemgr import StateManager, as_state
from ._identity import MASTER_NAME, Credentials, Identity, server_names

CA_DAYS = 3650
NODE_DAYS = 30
CN_MAX = 64  # the most characters of a certificate's common name (RFC 5280's ub-common-name)
"""A node's certificate lasts this long; the node renews it once a third is left."""
CA_FILE, CA_KEY = "ca.pem", "ca.key"


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def fingerprint(cert_pem: bytes) -> str:
    """``sha256:HEX`` of a certificate's DER bytes (what a join token carries)."""
    der = x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass
class ClusterCA:
    cert_pem: bytes
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def open(cls, where: str | Path | StateManager, create: bool = True) -> ClusterCA:
        """The CA kept in ``where`` (a folder, or the master's state seen under ``tls``);
        made there first if there is none and ``create``."""
        if isinstance(where, str | Path):
            folder = Path(where)
            if create:
                folder.mkdir(parents=True, exist_ok=True)
                os.chmod(folder, 0o700)
            elif not folder.is_dir():
                raise HeadwaterError(f"no cluster CA in {folder}: run `headwater init` first")
        state = as_state(where)
        cert, key = state.get(CA_FILE), state.get(CA_KEY)
        if cert is not None and key is not None:
            loaded = serialization.load_pem_private_key(key, None)
            if not isinstance(loaded, ec.EllipticCurvePrivateKey):
                raise HeadwaterError(f"{state.describe(CA_KEY)} is not the cluster CA's key")
            return cls(cert, loaded)
        if not create:
            raise HeadwaterError(
                f"no cluster CA in {state.describe('')}: run `headwater init` first"
            )
        ca = cls.create()
        state.put(CA_KEY, key_pem(ca.key))  # the key first: a certificate alone is no CA
        state.put(CA_FILE, ca.cert_pem)
        return ca

    @classmethod
    def create(cls) -> ClusterCA:
        key = new_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "headwater cluster CA")])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            # the master serves TLS with this certificate (see the module's docstring)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(MASTER_NAME)]), False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert.public_bytes(serialization.Encoding.PEM), key)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.cert_pem)

    def master_credentials(self) -> Credentials:
        """What the master serves TLS with: the CA certificate and key themselves."""
        return Credentials(self.cert_pem, self.cert_pem, key_pem(self.key))

    def sign(self, csr_pem: bytes, identity: Identity, days: float = NODE_DAYS) -> bytes:
        """A certificate for the key of ``csr_pem`` naming ``identity`` (the CSR's own names
        are ignored: who a node is comes from its join token, never from what it asks for)."""
        try:
            csr = x509.load_pem_x509_csr(csr_pem)
        except ValueError as exc:
            raise HeadwaterError(f"not a certificate signing request: {exc}") from None
        if not csr.is_signature_valid:
            raise HeadwaterError("the certificate signing request's signature is not valid")
        public = csr.public_key()
        if not isinstance(public, ec.EllipticCurvePublicKey):
            raise HeadwaterError("the certificate signing request must be for an EC (P-256) key")
        return self._issue(public, identity, days)

    def issue(self, identity: Identity, days: float = NODE_DAYS) -> Credentials:
        """A new key and certificate for ``identity`` (local runs, tools on the master's host)."""
        key = new_key()
        cert = self._issue(key.public_key(), identity, days)
        return Credentials(self.cert_pem, cert, key_pem(key))

    def _issue(self, public: ec.EllipticCurvePublicKey, identity: Identity, days: float) -> bytes:
        if len(str(identity).encode()) > CN_MAX:  # X.509's bound on a common name
            room = CN_MAX - len(identity.role) - 1
            raise HeadwaterError(
                f"node id {identity.name!r} is too long for its certificate (named "
                f"{identity.role}:ID, at most {CN_MAX} characters): use at most {room}"
            )
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, str(identity))]))
            .issuer_name(x509.load_pem_x509_certificate(self.cert_pem).subject)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            # the name a client of this role's servers checks (``server_names``)
            .add_extension(
                x509.SubjectAlternativeName([x509.DNSName(n) for n in server_names(identity.role)]),
                False,
            )
            .sign(self.key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM)
