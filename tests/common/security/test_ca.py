"""The cluster CA: kept private, signs what a join token allows and names no one else."""

from __future__ import annotations

import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

from headwater.common._exceptions import HeadwaterError
from headwater.common.security import ClusterCA, Credentials, Identity, fingerprint
from headwater.common.security._ca import key_pem, new_key


def _csr(common_name: str) -> tuple[bytes, bytes]:
    key = new_key()
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .sign(key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM), key_pem(key)


def test_the_ca_is_made_once_and_its_key_is_private(tmp_path):
    ca = ClusterCA.open(tmp_path / "tls")
    assert stat.S_IMODE((tmp_path / "tls" / "ca.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "tls").stat().st_mode) == 0o700
    assert ClusterCA.open(tmp_path / "tls").fingerprint == ca.fingerprint
    assert ca.fingerprint == fingerprint(ca.cert_pem) and ca.fingerprint.startswith("sha256:")
    with pytest.raises(HeadwaterError, match="headwater init"):
        ClusterCA.open(tmp_path / "none", create=False)


def test_a_signed_certificate_names_who_the_token_says_not_who_the_csr_asks(tmp_path):
    ca = ClusterCA.create()
    csr, key = _csr("master:master")  # a node asking to be the master
    cert = ca.sign(csr, Identity("agent", "gw-1"))
    creds = Credentials(ca.cert_pem, cert, key)
    assert creds.identity == Identity("agent", "gw-1")
    creds.save(tmp_path / "node")
    assert Credentials.load(tmp_path / "node") == creds
    assert stat.S_IMODE((tmp_path / "node" / "node.key").stat().st_mode) == 0o600
    with pytest.raises(HeadwaterError, match="not a certificate signing request"):
        ca.sign(b"garbage", Identity("agent", "gw-1"))
    with pytest.raises(HeadwaterError, match="--join"):
        Credentials.load(tmp_path / "empty")


def test_identity_parsing_accepts_known_roles_only():
    assert Identity.parse("worker:w1") == Identity("worker", "w1")
    for bad in ("w1", "root:w1", "agent:", ":x"):
        assert Identity.parse(bad) is None
