"""The checkpoint store's options: local by default, s3://BUCKET/PREFIX with an endpoint and
credentials (a file or the environment, never the command line), each wrong value a message."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from headwater.common._exceptions import HeadwaterError
from headwater.common.state._s3 import (
    S3Credentials,
    S3Settings,
    load_credentials,
    parse_endpoint,
    parse_store,
)
from headwater.common.state._store_args import (
    SharedStore,
    add_store_arguments,
    cluster_of,
    namespace,
    shared_store,
)

from ..._garage import Garage


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_store_arguments(p)
    return p.parse_args(list(argv))


def test_local_is_the_default_and_takes_no_s3_options() -> None:
    assert shared_store(_args()) is None
    assert shared_store(_args("--checkpoint-store", "local")) is None
    with pytest.raises(HeadwaterError, match="--s3-endpoint goes with --checkpoint-store s3://"):
        shared_store(_args("--s3-endpoint", "http://127.0.0.1:3900"))


def test_an_s3_store_with_a_credentials_file(tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.write_text("[default]\naws_access_key_id = GK123\naws_secret_access_key = s3cr3t\n")
    store = shared_store(
        _args(
            *("--checkpoint-store", "s3://ckpt-bucket/prod/eu/"),
            *("--s3-endpoint", "http://127.0.0.1:3900/", "--s3-region", "garage"),
            *("--s3-credentials", str(creds)),
        )
    )
    assert store == SharedStore(
        S3Settings("ckpt-bucket", "prod/eu", "http://127.0.0.1:3900", "garage"),
        S3Credentials("GK123", "s3cr3t"),
    )
    assert "s3cr3t" not in repr(store)  # never in a log line
    assert store.settings.describe() == "s3://ckpt-bucket/prod/eu at http://127.0.0.1:3900"
    # a container gets the options, and the secret on its standard input
    assert store.args() == [
        *("--checkpoint-store", "s3://ckpt-bucket/prod/eu", "--s3-endpoint"),
        *("http://127.0.0.1:3900", "--s3-region", "garage", "--s3-credentials", "-"),
    ]
    assert "s3cr3t" not in " ".join(store.args())
    assert b"aws_secret_access_key = s3cr3t" in store.credentials.ini()


def test_credentials_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    with pytest.raises(HeadwaterError, match=r"--s3-credentials FILE, or \$AWS_ACCESS_KEY_ID"):
        load_credentials(None)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "GKenv")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
    assert load_credentials(None) == S3Credentials("GKenv", "envsecret")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("file:///tmp/x", "say 'local' or s3://BUCKET/PREFIX"),
        ("s3://", "is not a bucket name"),
        ("s3://Upper", "is not a bucket name"),
        ("s3://ab", "is not a bucket name"),
        ("s3://bucket/a//b", "the prefix 'a//b' may hold"),
        ("s3://bucket/a/../b", "the prefix 'a/../b' may hold"),
        ("s3://bucket/a b", "the prefix 'a b' may hold"),
    ],
)
def test_a_wrong_store_says_what_is_wrong(value: str, says: str) -> None:
    with pytest.raises(HeadwaterError, match=f"--checkpoint-store {value!r}") as err:
        parse_store(value)
    assert says in str(err.value)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("127.0.0.1:3900", "give http://HOST:PORT"),
        ("ftp://host", "give http://HOST:PORT"),
        ("http://GK1:secret@host:3900", "credentials never go in a URL"),
        ("http://host:3900/bucket", "the endpoint is the server alone"),
        ("http://host:port", "its port is not a number"),
    ],
)
def test_a_wrong_endpoint_says_what_is_wrong(value: str, says: str) -> None:
    with pytest.raises(HeadwaterError, match=f"--s3-endpoint {value!r}: {says}"):
        parse_endpoint(value)


def test_s3_needs_an_endpoint_and_readable_credentials(tmp_path: Path) -> None:
    with pytest.raises(HeadwaterError, match="say where the S3 server is with --s3-endpoint"):
        shared_store(_args("--checkpoint-store", "s3://bucket"))
    base = ("--checkpoint-store", "s3://bucket", "--s3-endpoint", "http://h:1")
    with pytest.raises(HeadwaterError, match="cannot read it"):
        shared_store(_args(*base, "--s3-credentials", str(tmp_path / "none")))
    bad = tmp_path / "bad"
    bad.write_text("key=value\n")
    with pytest.raises(HeadwaterError, match="not S3 credentials; write '\\[default\\]'"):
        shared_store(_args(*base, "--s3-credentials", str(bad)))
    with pytest.raises(HeadwaterError, match="a region is letters"):
        shared_store(_args(*base, "--s3-region", "eu west"))


def test_namespaces_keep_clusters_topologies_and_containers_apart(tmp_path: Path) -> None:
    from headwater.common.security import ClusterCA

    assert cluster_of(None) == "insecure"
    ca = ClusterCA.create()
    (tmp_path / "tls").mkdir()
    (tmp_path / "tls" / "ca.pem").write_bytes(ca.cert_pem)
    cluster = cluster_of(tmp_path / "tls")
    assert len(cluster) == 16 and cluster == ca.fingerprint.removeprefix("sha256:")[:16]
    assert namespace("prod", cluster, "iot", 1) == f"prod/{cluster}/iot/1"
    assert namespace("", "insecure", "iot", 0) == "insecure/iot/0"


def test_the_worker_refuses_bad_values_with_a_message_not_a_traceback(tmp_path: Path) -> None:
    def worker(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "headwater", "worker", "--master", "127.0.0.1:9", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )

    done = worker("--checkpoint-store", "s3://Bad_Bucket", "--s3-endpoint", "http://h:1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "headwater: error: --checkpoint-store 's3://Bad_Bucket': 'Bad_Bucket' is not" in (
        done.stderr
    )
    done = worker("--checkpoint-store", "s3://bucket")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--s3-endpoint http(s)://HOST:PORT" in done.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "headwater", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for flag in ("--checkpoint-store", "--s3-endpoint", "--s3-region", "--s3-credentials"):
        assert flag in helped


def test_a_container_reads_its_workers_credentials_on_stdin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import io

    from headwater.common.runtime._container_config import parse_config

    store = SharedStore(
        S3Settings("ckpt", "p", "http://127.0.0.1:3900", "garage"), S3Credentials("GK1", "sec")
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(store.credentials.ini().decode()))
    argv = [
        *("--topology-file", "t.py", "--container", "0", "--containers", "1"),
        *("--tmaster", "127.0.0.1:1", "--workdir", str(tmp_path), "--state-dir", str(tmp_path)),
        "--insecure",
    ]
    assert parse_config([*argv, *store.args()]).shared_store == store
    assert parse_config(argv).shared_store is None


def test_a_worker_with_a_wrong_key_or_no_bucket_stops_with_a_message(
    garage: Garage, tmp_path: Path
) -> None:
    def worker(bucket: str, creds: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *(sys.executable, "-m", "headwater", "worker", "--master", "127.0.0.1:9"),
                *("--workdir", str(tmp_path / "w"), "--checkpoint-store", f"s3://{bucket}/p"),
                *("--s3-endpoint", garage.endpoint, "--s3-region", garage.region),
                *("--s3-credentials", str(creds)),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    wrong = tmp_path / "wrong"
    wrong.write_bytes(S3Credentials(garage.key_id, "0" * 64).ini())  # readable by all
    done = worker(garage.bucket, wrong)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"--s3-credentials {str(wrong)!r} may be read by other users" in done.stderr
    assert f"headwater: error: s3://{garage.bucket}/p at {garage.endpoint}" in done.stderr
    assert "0" * 64 not in done.stderr
    done = worker("no-such-bucket", garage.write_credentials(tmp_path / "right"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "no bucket 'no-such-bucket' (create it" in done.stderr
    assert "may be read by other users" not in done.stderr
