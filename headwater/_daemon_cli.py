"""`headwater master|worker|agent`: the daemons, their options and how they start (the
agent's in `_agent_cli.py`, what the three share in `_daemon_run.py`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from headwater._agent_cli import add_agent_parser
from headwater._argtypes import masters, number
from headwater._daemon_run import (
    add_identity_arguments,
    daemon_logging,
    default_dir,
    node_id_arg,
    run_daemon,
    warn_insecure,
)
from headwater._limits_cli import add_limit_arguments, limits_of
from headwater.common._exceptions import HeadwaterError
from headwater.common.state._store_args import (
    SharedStore,
    add_blob_store_arguments,
    add_store_arguments,
    shared_store,
)

__all__ = ["add_parsers", "warn_insecure"]


def add_parsers(sub: Any) -> None:
    master = sub.add_parser(
        "master", help="run the master daemon (topology masters, scheduler, package store, API)"
    )
    master.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on for nodes (default 127.0.0.1: this machine only)",
    )
    master.add_argument("--port", type=int, default=7070, help="gRPC port for nodes (default 7070)")
    _add_rest_options(master)
    master.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="the master's own folder: packages, unpacked code, model artifacts (a cache of "
        "those in --blob-store, if given), admin.token, and its records unless --state keeps "
        "them elsewhere (default: master/ in $HEADWATER_STATE_DIR, else "
        "~/.local/state/headwater)",
    )
    master.add_argument(
        "--state",
        default=None,
        metavar="STATE",
        help="where the master's records are kept (deployments, tokens, the CA, enrolments, "
        "revisions and checkpoints, models' metadata, rollouts, Spark jobs, health): a folder "
        "(local files; default: --state-dir) or zk://HOST:PORT[,HOST:PORT...]/CHROOT "
        "(ZooKeeper, with --state-auth-file; packages and model artifacts stay in --state-dir "
        "unless --blob-store shares them too)",
    )
    master.add_argument(
        "--state-auth-file",
        default=None,
        metavar="FILE",
        help="the master's ZooKeeper identity for a zk:// --state: a file holding "
        "user:password, readable by its owner only; every record is created with a digest "
        "ACL for it, so a client without it can neither read nor write them",
    )
    add_blob_store_arguments(master)
    master.add_argument(
        "--no-advertise",
        dest="advertise",
        action="store_false",
        help="do not announce the master by zeroconf on --host's network",
    )
    master.add_argument(
        "--join-port",
        type=int,
        default=7072,
        help="where nodes enrol with a join token (TLS, no client certificate; default 7072)",
    )
    master.add_argument(
        "--placement-delay",
        type=number(0, what="a number of seconds"),
        default=3.0,
        metavar="S",
        help="containers waiting for a worker are dealt once no new worker has attached for S "
        "seconds, so workers starting together share them (default 3; 0: at once)",
    )
    master.add_argument(
        "--failover-after",
        type=number(1, what="a number of seconds"),
        default=30.0,
        metavar="S",
        help="a worker with a shared checkpoint store (worker --checkpoint-store s3://...) "
        "offline for S seconds has its containers restarted on the workers sharing that "
        "store, from its last complete checkpoint (default 30); a worker whose checkpoints "
        "are on its own disk keeps its containers until it returns",
    )
    master.add_argument(
        "--health-interval",
        type=number(0.1, what="a number of seconds"),
        default=5.0,
        metavar="S",
        help="how often each topology's health manager reads its metrics (default 5)",
    )
    master.add_argument("--ready-file", default=None, help=argparse.SUPPRESS)
    from headwater._docker_cli import add_docker_options

    add_docker_options(master)
    master.set_defaults(func=_cmd_master)

    worker = sub.add_parser("worker", help="run a cloud worker that hosts containers")
    worker.add_argument(
        "--master",
        required=True,
        type=masters,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="the master's gRPC address (headwater master --port), or every master's, "
        "comma-separated, where standby masters run (the node attaches to the leader)",
    )
    worker.add_argument(
        "--id",
        type=node_id_arg,
        default=None,
        help="node id (default: generated once, kept in WORKDIR/node-id)",
    )
    worker.add_argument(
        "--workdir",
        default=None,
        metavar="DIR",
        help="its id, certificate, packages and containers' state and logs (default: worker/ "
        "in $HEADWATER_STATE_DIR, else ~/.local/state/headwater); a second worker on one "
        "machine needs its own",
    )
    worker.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="the address its containers' stream managers listen on and give to peers and "
        "agents (their uplinks come in there); default 127.0.0.1: this machine only",
    )
    for flag, what in (("--landing", "landing"), ("--warehouse", "warehouse")):
        worker.add_argument(
            flag,
            default=None,
            metavar="DIR",
            help=f"the {what} folder of the Spark jobs it runs whose submission names none "
            f"(default: WORKDIR/{what})",
        )
    add_store_arguments(worker)
    add_identity_arguments(worker, "worker")
    add_limit_arguments(worker)
    worker.set_defaults(func=_cmd_worker)
    add_agent_parser(sub)


def _add_rest_options(master: argparse.ArgumentParser) -> None:
    """The master's REST API: where it listens, its TLS, and --insecure."""
    master.add_argument("--http-port", type=int, default=7071, help="REST API port (default 7071)")
    master.add_argument(
        "--http-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address the REST API listens on (default 127.0.0.1: this machine only)",
    )
    master.add_argument(
        "--http-cert",
        default=None,
        metavar="FILE",
        help="serve the REST API over TLS: its certificate",
    )
    master.add_argument("--http-key", default=None, metavar="FILE", help="and its private key")
    master.add_argument(
        "--insecure",
        action="store_true",
        help="no tokens on the REST API and plaintext gRPC: anyone who reaches the master "
        "can run code on every node (a test bench on one machine only)",
    )


def _cmd_master(args: argparse.Namespace) -> int:
    from headwater._docker_cli import docker_options
    from headwater.cloud.master._main import INSECURE_WARNING, serve
    from headwater.common.statemgr import AUTH_WITHOUT_ZK, StateError, open_state

    tls = _rest_tls(args)
    docker = docker_options(args)
    blobs = _object_store(
        args, "master", "--blob-store", "submissions and model uploads fail with 503"
    )
    daemon_logging("master")
    if args.insecure:
        print(f"headwater master: WARNING: {INSECURE_WARNING}", file=sys.stderr, flush=True)
    state_dir = Path(args.state_dir) if args.state_dir else default_dir("master")
    ready = Path(args.ready_file) if args.ready_file else None
    # a --state given is opened (and checked: one line if not) now; the default, local files
    # in --state-dir, is made by serve() once its ports are known to be free
    if args.state is None and args.state_auth_file is not None:
        raise StateError(AUTH_WITHOUT_ZK)
    state = open_state(args.state, args.state_auth_file) if args.state else None
    return run_daemon(
        "master",
        serve(
            args.host,
            args.port,
            args.http_port,
            state_dir,
            ready,
            args.advertise,
            join_port=args.join_port,
            http_host=args.http_host,
            http_cert=tls[0] if tls else None,
            http_key=tls[1] if tls else None,
            insecure=args.insecure,
            docker=docker,
            placement_delay=args.placement_delay,
            health_interval=args.health_interval,
            state=state,
            failover_after=args.failover_after,
            blob_store=blobs,
        ),
    )


def _rest_tls(args: argparse.Namespace) -> tuple[Path, Path] | None:
    """``--http-cert`` and ``--http-key``, both readable and a pair, or neither."""
    if args.http_cert is None and args.http_key is None:
        return None
    if args.http_cert is None or args.http_key is None:
        raise HeadwaterError(
            "--http-cert and --http-key go together: give both (TLS) or neither (plain HTTP)"
        )
    import ssl

    for flag, path in (("--http-cert", args.http_cert), ("--http-key", args.http_key)):
        if not os.access(path, os.R_OK):
            raise HeadwaterError(f"{flag} {path!r}: no readable file there")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            args.http_cert, args.http_key
        )
    except ssl.SSLError as exc:
        raise HeadwaterError(
            f"--http-cert {args.http_cert!r} and --http-key {args.http_key!r} are not a PEM "
            f"certificate and its private key ({exc.reason or exc})"
        ) from None
    return Path(args.http_cert), Path(args.http_key)


def _cmd_worker(args: argparse.Namespace) -> int:

    from headwater import __version__
    from headwater.cloud.worker import serve

    store = _object_store(args, "worker", "--checkpoint-store", "checkpoints are declined")
    daemon_logging("worker")
    # the same workdir is the same node (its id is kept there): a second worker on this
    # machine needs a --workdir of its own
    workdir = Path(args.workdir) if args.workdir else default_dir("worker")
    if args.insecure:
        warn_insecure("worker")
    return run_daemon(
        "worker",
        serve(
            args.master,
            workdir,
            args.id,
            __version__,
            args.host,
            args.insecure,
            args.join,
            limits_of(args),
            args.isolation,
            (
                Path(args.landing or workdir / "landing").absolute(),
                Path(args.warehouse or workdir / "warehouse").absolute(),
            ),
            store,
        ),
    )


def _object_store(
    args: argparse.Namespace, role: str, flag: str, meanwhile: str
) -> SharedStore | None:
    """``flag`` (``--checkpoint-store``, ``--blob-store``) and its ``--s3-*`` options, checked
    against the server when it answers: a wrong key or a missing bucket stops the daemon here
    (the store's answer, never the secret); a server that is down does not (``meanwhile``:
    what fails until it is up). Credentials read from the environment leave it, so that no
    child (a container, a Spark job, a load of submitted code) inherits them."""
    from headwater.common.state._s3 import KEY_ENV, SECRET_ENV, ObjectStore, StoreUnavailable

    store = shared_store(args, flag)
    if store is None:
        return None
    if args.s3_credentials is None:  # read from the environment: no child inherits them
        for name in (KEY_ENV, SECRET_ENV):
            os.environ.pop(name, None)
    elif args.s3_credentials != "-" and os.stat(args.s3_credentials).st_mode & 0o077:
        print(
            f"headwater {role}: WARNING: --s3-credentials {args.s3_credentials!r} may be read "
            f"by other users (chmod 600 it)",
            file=sys.stderr,
            flush=True,
        )
    objects = ObjectStore(store.settings, store.credentials, timeout_s=5.0, retries=0)
    try:
        objects.check()
    except StoreUnavailable as exc:
        print(
            f"headwater {role}: WARNING: {exc}; {meanwhile} until it answers",
            file=sys.stderr,
            flush=True,
        )
    finally:
        objects.close()
    return store
