"""The CLI's REST client and a standby master: a 307 to the leader is followed with the
request as it was made (method, body, token), for a write as for a read."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from headwater._master_client import Client, _ToTheLeader
from headwater.common._exceptions import HeadwaterError


class _Server:
    """A loopback HTTP server whose every request is kept and answered by ``answer``."""

    def __init__(self, answer: Any) -> None:
        self.seen: list[dict[str, Any]] = []
        seen, reply = self.seen, answer

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                seen.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "token": self.headers.get("Authorization"),
                        "body": self.rfile.read(size),
                    }
                )
                status, headers, body = reply(self.path)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@pytest.fixture
def masters() -> Iterator[tuple[_Server, _Server]]:
    leader = _Server(lambda path: (200, {}, json.dumps({"done": path}).encode()))
    standby = _Server(lambda path: (307, {"Location": leader.url + path}, b""))
    try:
        yield standby, leader
    finally:
        standby.close()
        leader.close()


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_a_request_to_a_standby_is_made_once_by_the_leader(
    masters: tuple[_Server, _Server], method: str
) -> None:
    standby, leader = masters
    body = {"role": "viewer"} if method == "POST" else None
    got = Client(standby.url, token="s3cret").call(method, "/api/v1/tokens", body=body)
    assert got == {"done": "/api/v1/tokens"}
    assert [r["method"] for r in standby.seen] == [method]
    assert leader.seen == [
        {
            "method": method,
            "path": "/api/v1/tokens",
            "token": "Bearer s3cret",
            "body": json.dumps(body).encode() if body is not None else b"",
        }
    ]


def test_a_redirect_from_https_to_http_is_not_followed() -> None:
    req = urllib.request.Request(
        "https://master-a:7071/api/v1/tokens",
        data=b"{}",
        method="POST",
        headers={"Authorization": "Bearer s3cret"},
    )
    handler = _ToTheLeader()
    assert handler.redirect_request(req, None, 307, "", {}, "http://master-b:7071/x") is None
    again = handler.redirect_request(req, None, 307, "", {}, "https://master-b:7071/x")
    assert again is not None and again.get_method() == "POST" and again.data == b"{}"
    assert again.get_header("Authorization") == "Bearer s3cret"


def test_a_standby_with_no_leader_says_so() -> None:
    standby = _Server(lambda path: (503, {}, json.dumps({"error": "no master leads yet"}).encode()))
    try:
        with pytest.raises(HeadwaterError, match="no master leads yet"):
            Client(standby.url, token="t").call("POST", "/api/v1/tokens", body={})
    finally:
        standby.close()
