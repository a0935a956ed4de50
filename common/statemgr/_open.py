"""``open_state``: a state manager from what the operator wrote (``--state``).

A folder means local files; ``zk://HOST[:PORT][,HOST[:PORT]...][/CHROOT]`` means
ZooKeeper (port 2181 and chroot ``/headwater`` when not given), which needs the
master's ZooKeeper identity: a file holding ``user:password`` that only its owner
may read (``--state-auth-file``). Anything else is refused, saying what to write.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ._base import StateError, StateManager, segments

DEFAULT_ZK_PORT = 2181
DEFAULT_CHROOT = "/headwater"
ZK_SCHEME = "zk://"
_FORMS = (
    "a folder (local files) or zk://HOST:PORT[,HOST:PORT...]/CHROOT (ZooKeeper), "
    "e.g. zk://zk1:2181,zk2:2181/headwater"
)
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?$")
AUTH_WITHOUT_ZK = "--state-auth-file goes with a zk:// state; local files need none"
AUTH_HINT = (
    "a zk:// state needs the master's ZooKeeper credentials: write user:password in a file "
    "only you can read (chmod 600 FILE) and give it with --state-auth-file FILE"
)


@dataclass(frozen=True)
class ZkAddress:
    hosts: str  # host:port,host:port
    root: str  # /chroot

    def __str__(self) -> str:
        return f"{ZK_SCHEME}{self.hosts}{self.root}"


def is_zk(text: str) -> bool:
    return text.startswith(ZK_SCHEME)


def parse_zk(text: str) -> ZkAddress:
    """``zk://h1:2181,h2/chroot`` as hosts with ports and a chroot; StateError if it is not."""
    rest = text.removeprefix(ZK_SCHEME)
    hosts, slash, chroot = rest.partition("/")
    named = []
    for host in hosts.split(","):
        m = _HOST.match(host)
        port = int(m.group(2)) if m and m.group(2) else DEFAULT_ZK_PORT
        if m is None or not 0 < port < 65536:
            raise StateError(f"--state {text!r}: {host!r} is not HOST or HOST:PORT; give {_FORMS}")
        named.append(f"{m.group(1)}:{port}")
    root = f"/{chroot.strip('/')}" if slash and chroot.strip("/") else DEFAULT_CHROOT
    try:
        segments(root.lstrip("/"))
    except StateError:
        raise StateError(f"--state {text!r}: {root!r} is not a chroot; give {_FORMS}") from None
    return ZkAddress(",".join(named), root)


def read_auth(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(user, password)`` from a file holding ``user:password`` that only its owner may
    read; StateError saying what to fix."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
        text = file.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"--state-auth-file {str(file)!r}: cannot read it ({exc})") from None
    if stat.S_IMODE(mode) & 0o077:
        raise StateError(
            f"--state-auth-file {str(file)!r} may be read by others: it holds the master's "
            f"ZooKeeper password; chmod 600 {file}"
        )
    user, colon, password = text.partition(":")
    if not colon or not user or not password or "\n" in text:
        raise StateError(
            f"--state-auth-file {str(file)!r} must hold one line, user:password (the master's "
            "ZooKeeper identity)"
        )
    return user, password


def open_state(
    text: str, auth_file: str | os.PathLike[str] | None = None, *, timeout: float = 10.0
) -> StateManager:
    """The state manager ``text`` names: a folder (made if missing) or a ZooKeeper URL,
    connected and checked (StateError saying why not); ``timeout``: the longest a
    connection or one of ZooKeeper's answers is waited for."""
    if is_zk(text):
        address = parse_zk(text)
        if auth_file is None:
            raise StateError(AUTH_HINT)
        user, password = read_auth(auth_file)
        from ._zk import ZkStateManager

        return ZkStateManager(
            address.hosts, address.root, user, password, timeout=timeout, connect_timeout=timeout
        )
    if "://" in text or not text.strip():
        raise StateError(f"--state {text!r} is not a state: give {_FORMS}")
    if auth_file is not None:
        raise StateError(AUTH_WITHOUT_ZK)
    from ._local import LocalStateManager

    try:
        return LocalStateManager(Path(text), create=True)
    except OSError as exc:
        raise StateError(f"--state {text!r}: cannot make that folder ({exc.strerror})") from None
