"""What the three daemons (``headwater master|worker|agent``) share: their logging, their
default state folders, ``--join``/``--insecure`` and ``--id``, and running one to its end."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError


def node_id_arg(text: str) -> str:
    from headwater.common._ids import node_id_problem

    problem = node_id_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def daemon_logging(role: str) -> None:
    from headwater.common._logging import setup

    setup(role)


def default_dir(name: str) -> Path:
    from headwater.cloud.local import state_dir

    return state_dir() / name


def run_daemon(role: str, main: Coroutine[Any, Any, None]) -> int:
    """Run a daemon's ``main`` to its end; a port it needs that is taken (``PortInUse``,
    raised once what had started has stopped) is one line on stderr and exit status 2."""
    import asyncio

    from headwater.common._ports import PortInUse

    try:
        asyncio.run(main)
    except PortInUse as exc:
        print(f"headwater {role}: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def add_identity_arguments(p: argparse.ArgumentParser, role: str) -> None:
    """``--join`` and ``--insecure``: how a node gets the certificate its links use."""
    p.add_argument(
        "--join",
        type=_join_token,
        default=os.environ.get("HEADWATER_JOIN") or None,
        metavar="TOKEN",
        help=f"enrol on first start with a join token (`headwater token create --role {role}` "
        "prints one); the certificate is kept in WORKDIR/tls and the token is not needed again. "
        "Default: $HEADWATER_JOIN, which, unlike a command line, other users of the machine "
        "cannot read in /proc",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="development only: plaintext links to a master started with --insecure",
    )


def _join_token(text: str) -> Any:
    from headwater.common.security import JoinToken

    try:
        return JoinToken.parse(text)
    except HeadwaterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def warn_insecure(what: str) -> None:
    print(
        f"headwater {what}: WARNING: --insecure: its links are plaintext and unauthenticated; "
        "anyone who reaches them can run code or read data. Development only.",
        file=sys.stderr,
    )
