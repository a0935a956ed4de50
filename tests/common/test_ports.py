"""A port is its daemon's alone: gRPC servers without SO_REUSEPORT, and who holds a taken one.

gRPC's servers set ``SO_REUSEPORT`` unless told not to, so a second server on a taken
port came up and the kernel shared the connections between the two. These tests bind
real sockets on loopback; the daemons' one-line exits are in
``tests/integration/test_daemon_ports.py``.
"""

from __future__ import annotations

import ast
import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from headwater.common._exceptions import HeadwaterError
from headwater.common._ports import (
    OWN,
    PortInUse,
    bind_grpc,
    check_free,
    claimed,
    grpc_server,
    holder_of,
)
from headwater.common.runtime._peers import serve_peers
from headwater.common.security import Transport
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def listener() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """A port on loopback that another process listens on (and that process)."""
    code = (
        "import socket,sys\n"
        "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline()), proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()


def test_a_second_grpc_server_on_a_port_is_refused_and_names_the_holder() -> None:
    async def scenario() -> None:
        first = grpc_server()
        port = bind_grpc(first, "127.0.0.1:0")
        await first.start()
        second = grpc_server()
        plain = grpc.aio.server()  # SO_REUSEPORT on: still refused, the first does not share
        try:
            with pytest.raises(PortInUse) as refused:
                bind_grpc(second, f"127.0.0.1:{port}", option="--port")
            assert str(refused.value) == (
                f"port {port} on 127.0.0.1 is one of this daemon's own ports already: "
                "choose another with --port"
            )
            assert (refused.value.port, refused.value.holder) == (port, OWN)
            with pytest.raises(RuntimeError):
                plain.add_insecure_port(f"127.0.0.1:{port}")
        finally:
            for server in (plain, second, first):
                await server.stop(None)

    asyncio.run(scenario())


def test_the_stream_managers_server_does_not_share_its_port() -> None:
    """``serve_peers`` (workers' and ``headwater run``'s stream managers): a server that
    would share the port it took cannot bind there."""

    async def scenario() -> None:
        stmgr: Any = SimpleNamespace(transport=Transport.insecure())
        server, address = await serve_peers(stmgr, "127.0.0.1", pb_grpc.IngressServicer())
        plain = grpc.aio.server()
        try:
            with pytest.raises(RuntimeError):
                plain.add_insecure_port(address)
        finally:
            await plain.stop(None)
            await server.stop(None)

    asyncio.run(scenario())


def test_every_grpc_server_is_built_without_reuseport() -> None:
    """No daemon builds a gRPC server but through ``grpc_server``, and every aiohttp site
    starts inside ``claimed`` (a taken port: ``PortInUse``, not a traceback)."""
    builders, sites = [], []
    for folder in ("common", "edge", "cloud", "headwater"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "proto" in path.parts or path.name == "_ports.py" or path.is_symlink():
                continue
            text = path.read_text()
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                    "grpc.aio.server",
                    "grpc.server",
                ):
                    builders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if "TCPSite(" in text and "claimed(" not in text:
                sites.append(str(path.relative_to(ROOT)))
    assert builders == []
    assert sites == []


def test_holder_of_names_the_process_and_its_command(
    listener: tuple[int, subprocess.Popen[str]],
) -> None:
    port, proc = listener
    holder = holder_of(port)
    assert holder is not None and holder.startswith(f"pid {proc.pid} (-c import socket")
    with pytest.raises(PortInUse) as refused:
        check_free("127.0.0.1", port, "--status-port")
    assert str(refused.value) == (
        f"port {port} on 127.0.0.1 is taken by {holder}: stop it or choose another with "
        "--status-port"
    )


def test_a_holder_proc_does_not_tell_is_another_process(tmp_path: Path) -> None:
    """From a ``/proc`` like Linux's: the socket's inode, the process whose descriptor
    points at it, its command shortened; nothing known when no descriptor does."""
    (tmp_path / "net").mkdir()
    header = (
        "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode"
    )
    rest = "00000000:00000000 00:00000000 00000000 0 0"
    (tmp_path / "net" / "tcp").write_text(
        f"{header}\n"
        f"0: 0100007F:1B9E 00000000:0000 0A {rest} 4242 1\n"  # listening on 7070
        f"1: 0100007F:1B9F 0100007F:D431 01 {rest} 4343 1\n"  # a connection from 7071
    )
    (tmp_path / "net" / "tcp6").write_text(f"{header}\n")
    fds = tmp_path / "999999" / "fd"
    fds.mkdir(parents=True)
    os.symlink("socket:[4242]", fds / "7")
    os.symlink("/dev/null", fds / "0")
    argv = ["/usr/bin/python3.11", "-m", "headwater", "master", "--port", "7070", "--x" * 40]
    (tmp_path / "999999" / "cmdline").write_bytes("\0".join(argv).encode() + b"\0")
    holder = holder_of(7070, tmp_path)
    assert holder is not None and holder.startswith("pid 999999 (headwater master --port 7070 --x")
    assert holder.endswith("...)") and len(holder) == len("pid 999999 ()") + 80
    assert holder_of(7071, tmp_path) is None  # connected, not listening
    assert holder_of(7072, tmp_path) is None  # nobody
    assert "another process" in str(PortInUse("127.0.0.1", 7072, holder_of(7072, tmp_path)))


def test_a_site_on_a_taken_port_raises_port_in_use(
    listener: tuple[int, subprocess.Popen[str]],
) -> None:
    port, proc = listener
    with (
        pytest.raises(PortInUse, match=f"pid {proc.pid} "),
        claimed("127.0.0.1", port, "--http-port"),
        socket.socket() as s,
    ):
        s.bind(("127.0.0.1", port))


def test_another_bind_failure_is_one_line_and_not_port_in_use() -> None:
    with pytest.raises(HeadwaterError) as failed:
        check_free("192.0.2.1", 7070, "--port", strict=True)  # TEST-NET-1: not this machine
    assert not isinstance(failed.value, PortInUse)
    assert str(failed.value) == "cannot listen on 192.0.2.1:7070: Cannot assign requested address"
    check_free("192.0.2.1", 7070)  # not strict: the server's own bind decides
    check_free("127.0.0.1", 0)  # any free port is never taken
