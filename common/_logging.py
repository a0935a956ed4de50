"""Structured logs for the daemons: one record per line, as logfmt (default) or JSON.

``HEADWATER_LOG_FORMAT=json`` switches to JSON lines; ``HEADWATER_LOG_LEVEL``
sets the level, and, after commas, a logger's own
(``INFO,headwater.tmaster.checkpoints=DEBUG``: every checkpoint's line, which is DEBUG).
Every line carries the time (UTC, ISO 8601), level, logger, the process role and id, and
the message; an exception adds its traceback.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any


def _fields(record: logging.LogRecord, role: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        + f".{int(record.msecs):03d}Z",
        "level": record.levelname,
        "role": role,
        "pid": record.process,
        "logger": record.name,
        "msg": record.getMessage(),
    }
    if record.exc_info:
        out["exc"] = logging.Formatter().formatException(record.exc_info)
    return out


class JsonFormatter(logging.Formatter):
    def __init__(self, role: str) -> None:
        super().__init__()
        self.role = role

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record, self.role), ensure_ascii=False)


class LogfmtFormatter(logging.Formatter):
    def __init__(self, role: str) -> None:
        super().__init__()
        self.role = role

    def format(self, record: logging.LogRecord) -> str:
        parts = []
        for key, value in _fields(record, self.role).items():
            text = str(value)
            if key in ("msg", "exc") or not text or any(c in text for c in ' "='):
                text = json.dumps(text, ensure_ascii=False)
            parts.append(f"{key}={text}")
        return " ".join(parts)


def setup(role: str) -> None:
    """Configure the root logger of a daemon process (``role``: master, worker, agent, ...)."""
    fmt = os.environ.get("HEADWATER_LOG_FORMAT", "logfmt").lower()
    if fmt not in ("logfmt", "json"):
        raise ValueError(f"HEADWATER_LOG_FORMAT={fmt!r}: use 'logfmt' or 'json'")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter(role) if fmt == "json" else LogfmtFormatter(role))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    levels = os.environ.get("HEADWATER_LOG_LEVEL", "INFO").split(",")
    root.setLevel(levels[0].strip() or "INFO")
    for item in levels[1:]:
        name, eq, level = item.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"HEADWATER_LOG_LEVEL: {item!r}: use LOGGER=LEVEL after the comma")
        logging.getLogger(name.strip()).setLevel(level.strip())
