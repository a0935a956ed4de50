"""A daemon's ports are its own: a second daemon on a taken port exits with one line.

A second master on a running master's gRPC port used to come up beside it (gRPC's
servers share a port unless told not to) and nodes reached either master at random; a
second master on the very same ports died with a traceback. Now either exits with
status 2 and one line on stderr naming the port and its holder, and the first master
goes on serving alone.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

from headwater.common.security import JoinToken, TokenStore

from .._ports import free_port
from ._daemons import Daemons
from ._support import wait_for


def _headwater(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,  # the old code served on: it never ended
    )


def _listeners(port: int) -> int:
    """How many sockets listen on TCP ``port`` (any address), from /proc/net/tcp{,6}."""
    count = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rpartition(":")[2], 16) == port:
                count += 1
    return count


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _the_line(done: subprocess.CompletedProcess[str], role: str, port: int, option: str) -> str:
    """The one line a daemon refused a taken port with (exit 2, no traceback)."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"headwater {role}: port {port} on 127.0.0.1 is taken by ")
    assert lines[0].endswith(f": stop it or choose another with {option}")
    return lines[0]


def test_a_second_master_on_the_grpc_port_exits_and_the_first_serves_alone(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.start_master()
    port, first = _port(daemons.grpc), daemons.procs[0].pid
    done = _headwater(
        "master",
        "--port",
        str(port),
        "--http-port",
        str(free_port()),
        "--join-port",
        str(free_port()),
        "--state-dir",
        str(tmp_path / "second"),
        "--no-advertise",
    )
    line = _the_line(done, "master", port, "--port")
    assert re.search(rf"taken by pid {first} \(headwater master --host 127\.0\.0\.1 ", line)
    assert not (tmp_path / "second").exists()  # refused before it made anything
    assert _listeners(port) == 1
    daemons.start_worker("w1")  # reaches the one master there is
    wait_for(
        lambda: [n["id"] for n in daemons.api("/api/v1/nodes") if n["online"]] == ["w1"],
        30,
        "the worker online on the first master",
    )


def test_a_second_master_on_the_same_ports_is_one_line_and_status_2(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.start_master()
    ports = (_port(daemons.grpc), _port(daemons.http), daemons.join_port)
    done = _headwater(
        "master",
        "--port",
        str(ports[0]),
        "--http-port",
        str(ports[1]),
        "--join-port",
        str(ports[2]),
        "--state-dir",
        str(tmp_path / "second"),
        "--no-advertise",
    )
    _the_line(done, "master", ports[0], "--port")
    assert [_listeners(p) for p in ports] == [1, 1, 1]
    assert daemons.api("/api/v1/nodes") == []  # the first answers


def test_a_master_whose_rest_port_is_taken_says_which_option(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = _headwater(
            "master",
            "--port",
            str(free_port()),
            "--http-port",
            str(port),
            "--join-port",
            str(free_port()),
            "--state-dir",
            str(tmp_path / "master"),
            "--no-advertise",
        )
    _the_line(done, "master", port, "--http-port")


def test_an_agent_whose_status_port_is_taken_exits_with_one_line(tmp_path: Path) -> None:
    # a token to enrol with (no master needed: the port is checked first, and refused)
    raw = TokenStore(tmp_path / "tokens.json").create("agent", ttl_s=60)
    token = JoinToken(free_port(), raw, "sha256:" + "0" * 64)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = _headwater(
            "agent",
            "--id",
            "a1",
            "--master",
            f"127.0.0.1:{free_port()}",
            "--workdir",
            str(tmp_path / "a1"),
            "--status-port",
            str(port),
            "--join",
            str(token),
        )
    _the_line(done, "agent", port, "--status-port")
