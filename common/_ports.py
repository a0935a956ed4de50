"""Listening ports a daemon holds alone, and a clear error when one is taken.

gRPC's servers set ``SO_REUSEPORT`` on their sockets unless told not to, and the
kernel then lets a second process listen on the same address and shares the
connections out between the two at random: a second master started on a running
master's port came up without complaint, and nodes reached either one. So every
gRPC server is built by ``grpc_server`` (``SO_REUSEPORT`` off, which the unit tests
check of every server the code builds), every port bound through ``bind_grpc`` or
inside ``claimed`` (aiohttp's sites, which never set it), and a port that is taken
raises ``PortInUse``: its address, and who holds it when ``/proc`` tells (pid and
command line), so a daemon can stop with one line instead of a traceback.

    >>> str(PortInUse("127.0.0.1", 7070, "pid 1234", "--port"))
    'port 7070 on 127.0.0.1 is taken by pid 1234: stop it or choose another with --port'

A port of 0 (any free port) is never taken; a bind that fails for another reason (an
address not on this machine, a port below 1024) raises ``HeadwaterError`` with the
system's reason.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc

from ._exceptions import HeadwaterError

NO_REUSEPORT = ("grpc.so_reuseport", 0)
"""The server option that keeps gRPC from sharing its port with another process."""
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's state column (gRPC listens once bound)
_COMMAND_CHARS = 80
OWN = "this process"
"""``holder_of``'s answer when the holder is the process asking."""


class PortInUse(HeadwaterError):
    """A port a daemon must listen on is held by another socket.

    ``holder``: who holds it (``pid N (command)``), or None where that cannot be found;
    ``option``: the command-line option that chose the port, named in the advice.
    """

    def __init__(
        self, host: str, port: int, holder: str | None = None, option: str | None = None
    ) -> None:
        self.host, self.port, self.holder, self.option = host, port, holder, option
        where = f"port {port} on {host}"
        if holder == OWN:
            advice = f": choose another with {option}" if option else ""
            super().__init__(f"{where} is one of this daemon's own ports already{advice}")
            return
        advice = f": stop it or choose another with {option}" if option else ""
        super().__init__(f"{where} is taken by {holder or 'another process'}{advice}")


def grpc_server(
    *, options: Sequence[tuple[str, Any]] = (), interceptors: Sequence[Any] = ()
) -> grpc.aio.Server:
    """A gRPC server (``grpc.aio.server`` with ``options`` and ``interceptors``) whose
    ports are its own: ``SO_REUSEPORT`` off. Build every server with it."""
    return grpc.aio.server(
        interceptors=list(interceptors) or None, options=[*options, NO_REUSEPORT]
    )


def bind_grpc(
    server: grpc.aio.Server,
    address: str,
    credentials: grpc.ServerCredentials | None = None,
    option: str | None = None,
) -> int:
    """Bind ``server`` to ``address`` (``HOST:PORT``; TLS with ``credentials``); the port.

    A taken port raises ``PortInUse`` (naming ``option``) before gRPC tries it, so gRPC
    logs nothing of it; a bind gRPC refuses all the same is explained the same way.
    """
    host, port = split_address(address)
    check_free(host, port, option)
    try:
        if credentials is None:
            return int(server.add_insecure_port(address))
        return int(server.add_secure_port(address, credentials))
    except RuntimeError as exc:  # grpc.aio's "Failed to bind to address ...": say why
        check_free(host, port, option, strict=True)
        holder = holder_of(port)
        if holder is not None:  # taken between the check and the bind
            raise PortInUse(host, port, holder, option) from None
        raise HeadwaterError(f"cannot listen on {address}: {exc}") from None


@contextmanager
def claimed(host: str, port: int, option: str | None = None) -> Iterator[None]:
    """Turn a failed bind in the block (an aiohttp site's ``start``) into ``PortInUse``,
    or a one-line ``HeadwaterError`` for another reason."""
    try:
        yield
    except OSError as exc:
        raise _bind_failure(host, port, exc, option) from None


def check_free(host: str, port: int, option: str | None = None, *, strict: bool = False) -> None:
    """Raise ``PortInUse`` if ``port`` on ``host`` is taken; port 0 never is. ``strict``:
    raise ``HeadwaterError`` too where an address of ``host`` cannot be bound for another
    reason (without it, the server's own bind decides: one of a name's addresses is
    enough for it)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise HeadwaterError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    for family, kind, proto, _, sockaddr in infos:
        with socket.socket(family, kind, proto) as probe:
            # as servers do: a connection of a stopped daemon in TIME_WAIT does not count
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(sockaddr)
            except OSError as exc:
                if strict or exc.errno == errno.EADDRINUSE:
                    raise _bind_failure(host, port, exc, option) from None


def _bind_failure(host: str, port: int, exc: OSError, option: str | None) -> HeadwaterError:
    if exc.errno == errno.EADDRINUSE:
        return PortInUse(host, port, holder_of(port), option)
    reason = exc.strerror or str(exc)
    return HeadwaterError(f"cannot listen on {host}:{port}: {reason}")


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[V6]:PORT`` too) as host and port."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def holder_of(port: int, proc: Path = Path("/proc")) -> str | None:
    """Who listens on TCP ``port`` (any address): ``pid N (command)``, ``this process``,
    or None where ``/proc`` does not say (another user's process, another system)."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return None
    for pid in _pids(proc):
        if not any(link in inodes for link in _fd_links(proc / pid / "fd")):
            continue
        if int(pid) == os.getpid():
            return OWN
        command = _command(proc / pid / "cmdline")
        return f"pid {pid} ({command})" if command else f"pid {pid}"
    return None


def _listening_inodes(port: int, proc: Path) -> set[str]:
    """``socket:[INODE]`` of every TCP socket listening on ``port``."""
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            if int(fields[1].rpartition(":")[2], 16) == port:
                found.add(f"socket:[{fields[9]}]")
    return found


def _fd_links(fds: Path) -> Iterator[str]:
    """What a process's descriptors point at; none where it is gone or not ours to read."""
    try:
        names = os.listdir(fds)
    except OSError:
        return
    for name in names:
        try:
            yield os.readlink(fds / name)
        except OSError:  # closed meanwhile (the one that listed them, in this process)
            continue


def _pids(proc: Path) -> list[str]:
    try:
        return sorted((n for n in os.listdir(proc) if n.isdigit()), key=int)
    except OSError:
        return []


def _command(cmdline: Path) -> str:
    """A process's command line, short: ``headwater master --port 7070`` rather than the
    interpreter's path and ``-m``."""
    try:
        args = [a for a in cmdline.read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        return ""
    if args and Path(args[0]).name.startswith("python"):
        args = args[1:]
        if args[:1] == ["-m"]:
            args = args[1:]
    if args:
        args[0] = Path(args[0]).name
    text = " ".join(args)
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 3] + "..."


def free_ports(n: int) -> list[int]:
    """``n`` different loopback ports free just now, for daemons about to be started on them
    (all held while picked: the kernel hands a port just released to the next ``bind`` often
    enough for two separate picks to be the same port)."""
    held = [socket.socket() for _ in range(n)]
    try:
        for s in held:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in held]
    finally:
        for s in held:
            s.close()
