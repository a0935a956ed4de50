"""The CLI's client of the master's REST API: where the master is, and one call to it.

Shared by the CLI's modules (``_cli``, ``_edits_cli``), which import it and not
each other's internals.
"""

from __future__ import annotations

import contextlib
import json
import os
import urllib.error
import urllib.request
from typing import Any

from headwater.common._exceptions import HeadwaterError


def api(method: str, url: str, data: bytes | None = None) -> Any:
    """``method url`` with ``data``; the JSON answer, or a ``HeadwaterError`` that says why not."""
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        with contextlib.suppress(ValueError, KeyError, TypeError):  # a JSON {"error": ...}
            body = json.loads(body)["error"]
        raise HeadwaterError(body or str(exc)) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise HeadwaterError(f"cannot reach the master at {url}: {exc}") from exc


def master_url(url: str | None) -> str:
    """The master's API URL: ``url``, else ``HEADWATER_MASTER``; an error if neither."""
    url = url or os.environ.get("HEADWATER_MASTER")
    if not url:
        raise HeadwaterError(
            "name the master: --master URL or HEADWATER_MASTER=URL "
            "(headwater master prints its API URL)"
        )
    return url.rstrip("/")
