"""The CLI's client of the REST API: where the master is, which token to send, one call.

Shared by the CLI's modules (``_cli``, ``_edits_cli``, ``_tokens_cli``), which
import it and not each other's internals. The token is the first of:
``--token TOKEN``, ``$HEADWATER_TOKEN``, ``--token-file FILE``, and, for the
topology master of ``headwater run`` on this machine, the token that run
keeps beside its record. An ``https`` master's certificate is checked against
``--cacert FILE`` (or ``$HEADWATER_CACERT``), else the system's CAs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError

_NO_TOKEN = (
    "give a token with --token TOKEN, HEADWATER_TOKEN=TOKEN or --token-file FILE; "
    "on the master's host, `cat STATE/admin.token` shows the admin token it made at its "
    "first start (STATE: its --state-dir)"
)
_LOW_ROLE = "ask an admin for a token with that role: `headwater token create --role ROLE`"


def add_client_options(p: argparse.ArgumentParser, master_help: str, *aliases: str) -> None:
    """``--master URL`` (and ``aliases``), ``--token``, ``--token-file``, ``--cacert``."""
    p.add_argument("--master", *aliases, dest="url", metavar="URL", help=master_help)
    p.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="the REST API token to send (default: $HEADWATER_TOKEN, else --token-file)",
    )
    p.add_argument("--token-file", default=None, metavar="FILE", help="a file holding that token")
    p.add_argument(
        "--cacert",
        default=None,
        metavar="FILE",
        help="the CA of an https master's certificate (default: $HEADWATER_CACERT, else "
        "the system's)",
    )


def given_token(args: argparse.Namespace) -> str | None:
    """The token the user gave: ``--token``, else ``$HEADWATER_TOKEN``, else ``--token-file``."""
    token = getattr(args, "token", None) or os.environ.get("HEADWATER_TOKEN")
    if token:
        return token.strip()
    file = getattr(args, "token_file", None)
    if file:
        return read_token(Path(file), "--token-file")
    return None


def read_token(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise HeadwaterError(f"{what} {str(path)!r}: cannot read it ({exc.strerror})") from None


class _ToTheLeader(urllib.request.HTTPRedirectHandler):
    """A standby master answers every request but ``GET /api/v1/leader`` with a 307 to the
    leader (docs/cluster.md): the request goes there as it was made, its method, body and
    token kept (urllib itself follows a 307 for a GET alone), but never from https to http."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if code not in (307, 308):
            return super().redirect_request(req, fp, code, msg, headers, newurl)
        if req.full_url.startswith("https:") and not newurl.startswith("https:"):
            return None  # the 307 is the answer: said as an error
        return urllib.request.Request(
            newurl,
            data=req.data,
            method=req.get_method(),
            headers=dict(req.header_items()),
            origin_req_host=req.origin_req_host,
            unverifiable=True,
        )


@dataclass(frozen=True)
class Client:
    """The REST API at ``url``, called with ``token`` (if any), trusting ``cacert`` (if any)."""

    url: str
    token: str | None = None
    cacert: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace, url: str | None = None) -> Client:
        cacert = getattr(args, "cacert", None) or os.environ.get("HEADWATER_CACERT")
        return cls(url or master_url(args.url), given_token(args), cacert)

    def call(self, method: str, path: str, data: bytes | None = None, body: Any = None) -> Any:
        """``method path`` with ``data`` (or ``body`` as JSON); the JSON answer, or a
        ``HeadwaterError`` that says why not and what to do."""
        headers = {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        url = f"{self.url}{path}"
        try:
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
        except ValueError:  # urllib's "unknown url type"
            raise HeadwaterError(
                f"the master {self.url[:200]!r} is not a URL: give http(s)://HOST:PORT, e.g. "
                "--master http://127.0.0.1:7071"
            ) from None
        context = None
        if self.url.startswith("https:"):
            try:
                context = ssl.create_default_context(cafile=self.cacert)
            except (OSError, ssl.SSLError) as exc:
                raise HeadwaterError(f"--cacert {self.cacert!r}: not a CA file ({exc})") from None
        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=context), _ToTheLeader()
        )
        try:
            with opener.open(req, timeout=60) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            body_text = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError, KeyError, TypeError):  # a JSON {"error": ...}
                body_text = json.loads(body_text)["error"]
            reason = body_text or str(exc)
            if exc.code == 401:
                raise HeadwaterError(
                    f"{self.url} refused the request: {reason}; {_NO_TOKEN}"
                ) from None
            if exc.code == 403:  # a job's token: no role would help it
                hint = "" if reason.startswith("a job's token") else f"; {_LOW_ROLE}"
                raise HeadwaterError(f"{self.url} refused the request: {reason}{hint}") from None
            raise HeadwaterError(reason) from exc
        except (urllib.error.URLError, OSError) as exc:
            why = getattr(exc, "reason", exc)
            hint = ""
            if isinstance(why, ssl.SSLCertVerificationError):
                hint = "; give the CA of its certificate with --cacert FILE or HEADWATER_CACERT"
            raise HeadwaterError(f"cannot reach the master at {url}: {why}{hint}") from exc


def master_url(url: str | None) -> str:
    """The master's API URL: ``url``, else ``HEADWATER_MASTER``; an error if neither."""
    url = url or os.environ.get("HEADWATER_MASTER")
    if not url:
        raise HeadwaterError(
            "name the master: --master URL or HEADWATER_MASTER=URL "
            "(headwater master prints its API URL)"
        )
    return url.rstrip("/")
