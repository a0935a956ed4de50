"""deploy/compose/etc/healthy, the compose services' health check in bash alone, against real
local servers (an HTTP server and a TCP one that answers a word), and the compose files'
checks: none starts a Python interpreter (Docker runs them every few seconds in every
container). The checks in a running cluster are in tests/integration/test_compose.py."""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

COMPOSE = Path(__file__).resolve().parents[1] / "deploy" / "compose"
HEALTHY = COMPOSE / "etc" / "healthy"
STATUS = b'{"id": "a", "attached": true, "metrics": {"mqtt_connected": 1.0}}'


_MOVED = {
    "/moved": "http://localhost:{port}/status",
    "/moved-here": "/status",
    "/moved-away": "http://127.0.0.1:{free}/status",  # to a port no one serves
    "/moved-twice": "/moved",  # one redirect is followed, not two
    "/moved-to-tls": "https://127.0.0.1:{port}/status",
}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        port = self.connection.getsockname()[1]  # the server's, this connection's end
        if self.headers.get("Host") not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            self.send_error(421)  # as the agent's status port refuses another Host
        elif self.path == "/status":
            self.send_response(200)
            self.end_headers()
            self.wfile.write(STATUS)
        elif self.path in _MOVED:  # as a standby master sends every request to the leader
            self.send_response(307)
            self.send_header("Location", _MOVED[self.path].format(port=port, free=_free_port()))
            self.end_headers()
        elif self.path == "/in-headers":  # the texts in a header, not in the body
            self.send_response(200)
            self.send_header("X-Said", '"attached": true')
            self.end_headers()
            self.wfile.write(b'{"attached": false}')
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def http_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _serving(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    """A TCP server on a free loopback port whose each connection ``answer`` handles."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            answer(conn)

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in held:
        conn.close()


def _zookeeper(conn: socket.socket) -> None:  # answers srvr as ZooKeeper does, then closes
    if conn.recv(16) == b"srvr":
        conn.sendall(b"Zookeeper version: 3.8\nMode: standalone\n")
    conn.close()


@pytest.fixture(scope="module")
def word_port() -> Iterator[int]:
    yield from _serving(_zookeeper)


@pytest.fixture(scope="module")
def mute_port() -> Iterator[int]:
    """A server that takes connections and never answers nor closes them."""
    yield from _serving(lambda conn: None)


def _not_http(conn: socket.socket) -> None:
    conn.recv(4096)
    conn.sendall(b"ERR 200 what?\r\n")
    conn.close()


@pytest.fixture(scope="module")
def not_http_port() -> Iterator[int]:
    yield from _serving(_not_http)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(*args: object, deadline: float = 3) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(HEALTHY), *map(str, args)],
        env={**os.environ, "HEALTHY_DEADLINE": str(deadline)},
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_http_answers_200_with_each_text(http_port: int) -> None:
    assert _healthy("http", http_port, "/status").returncode == 0
    ok = _healthy("http", http_port, "/status", '"attached": true', '"mqtt_connected": 1.0')
    assert ok.returncode == 0, ok.stderr
    missing = _healthy("http", http_port, "/status", '"attached": false')
    assert missing.returncode == 1 and "no '\"attached\": false' in the answer" in missing.stderr
    gone = _healthy("http", http_port, "/nothing")
    assert gone.returncode == 1 and "GET /nothing: HTTP/1.0 404 Not Found" in gone.stderr
    refused = _healthy("http", _free_port(), "/status")
    assert refused.returncode == 1
    header = _healthy("http", http_port, "/in-headers", '"attached": true')
    assert header.returncode == 1 and "no '\"attached\": true' in the answer" in header.stderr


def test_one_redirect_is_followed_to_a_server_that_answers_200(http_port: int) -> None:
    for path in ("/moved", "/moved-here"):
        done = _healthy("http", http_port, path, '"attached": true')
        assert done.returncode == 0, done.stderr
    away = _healthy("http", http_port, "/moved-away")
    assert away.returncode == 1 and "(sent to http://127.0.0.1:" in away.stderr
    assert away.stderr.startswith("no connection to 127.0.0.1:")
    twice = _healthy("http", http_port, "/moved-twice")
    assert (
        twice.returncode == 1 and "GET /moved-twice (sent to /moved): HTTP/1.0 307" in twice.stderr
    )
    tls = _healthy("http", http_port, "/moved-to-tls")
    assert tls.returncode == 1 and "not an http:// address this check follows" in tls.stderr


def test_an_answer_that_is_not_http_200_is_not_healthy(not_http_port: int) -> None:
    done = _healthy("http", not_http_port, "/status")
    assert done.returncode == 1 and "GET /status: ERR 200 what?" in done.stderr


def test_a_service_that_never_answers_is_unhealthy_within_the_deadline(mute_port: int) -> None:
    for args in (("tcp", mute_port, "srvr", "Mode:"), ("http", mute_port, "/status")):
        t = time.monotonic()
        done = _healthy(*args, deadline=1)
        assert done.returncode != 0 and time.monotonic() - t < 10


def test_tcp_takes_a_connection_and_checks_an_answer(word_port: int) -> None:
    assert _healthy("tcp", word_port).returncode == 0
    assert _healthy("tcp", word_port, "srvr", "Mode:").returncode == 0
    assert _healthy("tcp", word_port, "srvr", "Mode: leader").returncode == 1
    assert _healthy("tcp", _free_port()).returncode == 1


@pytest.mark.parametrize(
    "args", [(), ("ping",), ("tcp",), ("tcp", "a1"), ("tcp", "1", "srvr"), ("http", "1")]
)
def test_a_wrong_use_says_how_and_exits_1(args: tuple[str, ...]) -> None:
    done = _healthy(*args)  # (1: Docker reserves 2)
    assert done.returncode == 1 and done.stderr.startswith("usage: healthy tcp PORT")


def test_no_compose_health_check_starts_python() -> None:
    checks = []
    for name in ("docker-compose.yml", "docker-compose.ha.yml"):
        text = (COMPOSE / name).read_text()
        blocks = re.findall(r"healthcheck:.*\n\s+test: (\[.*\])\n", text)
        checks += [json.loads(b) for b in blocks]  # the flow sequences are JSON
        assert len(blocks) == text.count("healthcheck:")
    assert len(checks) == 8
    for test in checks:
        assert not any("python" in part for part in test), test
