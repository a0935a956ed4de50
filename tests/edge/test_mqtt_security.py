"""The agent's MQTT credentials and TLS against a real Mosquitto with a password file and a
TLS listener (certificates made by the test)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from paho.mqtt.enums import CallbackAPIVersion

from headwater.common.state import DurableLog
from headwater.edge import MqttIngest, MqttSource

from .._ports import free_port
from .._wait import wait_for
from ..conftest import start_mosquitto

USER, SECRET = "gateway", "s3cret-pass"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name | None,
    signer: ec.EllipticCurvePrivateKey,
    ca: bool,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        b = b.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return b.sign(signer, hashes.SHA256())


@dataclass
class SecureBroker:
    port: int
    ca: Path


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[SecureBroker]:
    """Mosquitto on loopback: TLS only, no anonymous clients, one account."""
    home = tmp_path / "broker"
    home.mkdir()
    ca_key, server_key = _key(), _key()
    ca = _cert("test CA", ca_key, None, ca_key, ca=True)
    server = _cert("127.0.0.1", server_key, ca.subject, ca_key, ca=False)
    (home / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (home / "server.pem").write_bytes(server.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, home / "server.key")
    passwd = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    subprocess.run(
        [passwd, "-b", "-c", str(home / "passwd"), USER, SECRET],
        check=True,
        capture_output=True,
        timeout=30,
    )
    port = free_port()
    as_root = "user root\n" if os.geteuid() == 0 else ""
    (home / "mosquitto.conf").write_text(
        f"listener {port} 127.0.0.1\n"
        "allow_anonymous false\n"
        f"password_file {home}/passwd\n"
        f"cafile {home}/ca.pem\ncertfile {home}/server.pem\nkeyfile {home}/server.key\n"
        "persistence false\n"
        f"{as_root}"
    )
    proc = start_mosquitto(home / "mosquitto.conf", port, home / "mosquitto.log")
    try:
        yield SecureBroker(port, home / "ca.pem")
    finally:
        proc.terminate()
        proc.wait(10)


def _publish(broker: SecureBroker, n: int) -> None:
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="test-publisher")
    pub.username_pw_set(USER, SECRET)
    pub.tls_set(ca_certs=str(broker.ca))
    pub.connect("127.0.0.1", broker.port)
    pub.loop_start()
    try:
        infos = [pub.publish(f"sensors/s{i}", b'{"v": %d}' % i, qos=1) for i in range(n)]
        for info in infos:
            info.wait_for_publish(10)
    finally:
        pub.disconnect()
        pub.loop_stop()


def _appended(log_dir: Path) -> int:
    log = DurableLog(log_dir / "p0")
    try:
        return len(list(log.read(0, 1_000_000)))
    finally:
        log.close()


def test_with_its_account_over_tls_the_agent_ingests(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    source = MqttSource(
        "127.0.0.1",
        secure_broker.port,
        client_id="gw-tls",
        username=USER,
        password=SECRET,
        ca_file=str(secure_broker.ca),
    )
    assert SECRET not in repr(source)
    ingest = MqttIngest(source, tmp_path / "ingest")
    ingest.start()
    try:
        wait_for(lambda: ingest.stats.connected, 15, "the subscription over TLS")
        _publish(secure_broker, 50)
        wait_for(lambda: ingest.stats.acked == 50, 15, "50 readings appended and acked")
    finally:
        ingest.stop()
    assert _appended(tmp_path / "ingest") == 50


@pytest.mark.parametrize(
    ("password", "tls"), [("wrong", True), (SECRET, False)], ids=["wrong-password", "no-tls"]
)
def test_a_wrong_password_or_no_tls_is_not_let_in(
    secure_broker: SecureBroker, tmp_path: Path, password: str, tls: bool
) -> None:
    source = MqttSource(
        "127.0.0.1",
        secure_broker.port,
        client_id="gw-bad",
        username=USER,
        password=password,
        ca_file=str(secure_broker.ca) if tls else None,
    )
    ingest = MqttIngest(source, tmp_path / "ingest")
    ingest.start()
    try:
        wait_for(lambda: ingest.health.has("mqtt"), 15, "the mqtt health reason")
        assert not ingest.stats.connected
    finally:
        ingest.stop()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--mqtt-cert", "/etc/hostname"], "--mqtt-cert and --mqtt-key go together"),
        (["--mqtt-ca", "/nonexistent/ca.pem"], "--mqtt-ca '/nonexistent/ca.pem': no readable"),
        (["--mqtt-password-file", "/etc/hostname"], "an MQTT password needs --mqtt-username"),
    ],
)
def test_the_cli_says_what_is_wrong_with_the_mqtt_options(
    tmp_path: Path, args: list[str], says: str
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "headwater",
            "agent",
            "--master",
            "127.0.0.1:1",
            "--workdir",
            str(tmp_path / "gw"),
            "--mqtt",
            "127.0.0.1:1883",
            *args,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert says in done.stderr
