"""Which object store a daemon shares: the options, checked, and what they make.

``headwater worker`` and the container process take the checkpoint store's
options (``add_store_arguments``): ``--checkpoint-store local`` (the default: each
container's checkpoints on its host's disk) or ``s3://BUCKET/PREFIX`` with
``--s3-endpoint``, ``--s3-region`` and ``--s3-credentials FILE`` (else the
``AWS_*`` environment; a container is handed its worker's on its standard
input: ``-``). ``headwater master`` takes ``--blob-store`` (where its packages and
model artifacts outlive its disk) with the same ``--s3-*`` options
(``add_blob_store_arguments``). ``shared_store`` turns either into a ``SharedStore``
(None: local), raising HeadwaterError with a message for anything wrong.

A container's objects go under ``namespace``: the prefix, the cluster (its CA's
fingerprint, so two clusters that share a bucket and prefix never meet), the
topology and the container's number.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ._s3 import (
    DEFAULT_REGION,
    LOCAL,
    S3Credentials,
    S3Settings,
    load_credentials,
    parse_endpoint,
    parse_store,
    read_credentials,
)


@dataclass(frozen=True)
class SharedStore:
    """A shared checkpoint store: where, and the credentials (never printed)."""

    settings: S3Settings
    credentials: S3Credentials

    def args(self) -> list[str]:
        """A container's options for it; the credentials go on its standard input."""
        s = self.settings
        return [
            *("--checkpoint-store", s.url, "--s3-endpoint", s.endpoint),
            *("--s3-region", s.region, "--s3-credentials", "-"),
        ]


def add_store_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checkpoint-store",
        default=LOCAL,
        metavar="local|s3://BUCKET/PREFIX",
        help="where its containers' checkpoints live: 'local' (the default: on this host's "
        "disk, lost with it) or an S3-compatible bucket every worker shares, so a container "
        "restarted on another worker restores its state",
    )
    _add_s3_arguments(p, "--checkpoint-store")


def add_blob_store_arguments(p: argparse.ArgumentParser) -> None:
    """``headwater master``'s ``--blob-store`` and the ``--s3-*`` options."""
    p.add_argument(
        "--blob-store",
        default=LOCAL,
        metavar="local|s3://BUCKET/PREFIX",
        help="where the packages (topologies', Spark jobs') and model artifacts live: "
        "'local' (the default: in --state-dir, lost with this host) or an S3-compatible "
        "bucket every master shares, so a standby that takes over runs the topologies and "
        "serves the models (--state-dir keeps a cache)",
    )
    _add_s3_arguments(p, "--blob-store")


def _add_s3_arguments(p: argparse.ArgumentParser, flag: str) -> None:
    p.add_argument(
        "--s3-endpoint",
        default=None,
        metavar="URL",
        help=f"the S3 server, http(s)://HOST:PORT (with {flag} s3://...)",
    )
    p.add_argument(
        "--s3-region",
        default=DEFAULT_REGION,
        metavar="REGION",
        help=f"the region requests are signed for (default {DEFAULT_REGION}; Garage's is 'garage')",
    )
    p.add_argument(
        "--s3-credentials",
        default=None,
        metavar="FILE",
        help="the access key and secret, in the AWS shared credentials format ([default], "
        "aws_access_key_id = ..., aws_secret_access_key = ...); default: $AWS_ACCESS_KEY_ID "
        "and $AWS_SECRET_ACCESS_KEY",
    )


def shared_store(args: argparse.Namespace, flag: str = "--checkpoint-store") -> SharedStore | None:
    """The shared store ``flag`` (``--checkpoint-store`` or ``--blob-store``) and the
    ``--s3-*`` options name (None: local); HeadwaterError if they are wrong."""
    from .._exceptions import HeadwaterError

    text = getattr(args, flag.removeprefix("--").replace("-", "_"))
    where = parse_store(text, flag)
    if where is None:
        for option, value in (
            ("--s3-endpoint", args.s3_endpoint),
            ("--s3-credentials", args.s3_credentials),
        ):
            if value is not None:
                raise HeadwaterError(f"{option} goes with {flag} s3://BUCKET/PREFIX")
        return None
    if args.s3_endpoint is None:
        raise HeadwaterError(
            f"{flag} {text}: say where the S3 server is with --s3-endpoint http(s)://HOST:PORT"
        )
    if not args.s3_region or not args.s3_region.replace("-", "").isalnum():
        raise HeadwaterError(f"--s3-region {args.s3_region!r}: a region is letters, digits and '-'")
    settings = S3Settings(where[0], where[1], parse_endpoint(args.s3_endpoint), args.s3_region)
    if args.s3_credentials == "-":
        credentials = read_credentials(sys.stdin.read(), "the credentials on standard input")
    else:
        credentials = load_credentials(args.s3_credentials)
    return SharedStore(settings, credentials)


def cluster_of(tls_dir: Path | None) -> str:
    """The cluster a node belongs to, as a shared store's keys name it: the first 16 hex
    digits of its CA's SHA-256 fingerprint ('insecure' for a node without TLS)."""
    if tls_dir is None:
        return "insecure"
    from ..security._ca import fingerprint

    return fingerprint((tls_dir / "ca.pem").read_bytes()).removeprefix("sha256:")[:16]


def namespace(prefix: str, cluster: str, topology: str, container: int) -> str:
    """Where one container's checkpoints go in the bucket."""
    return "/".join(p for p in (prefix, cluster, topology, str(container)) if p)
