"""headwater.common._logging: daemon log lines as logfmt or JSON."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from headwater.common._logging import JsonFormatter, LogfmtFormatter, setup


def _record(msg: str, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("headwater.master", logging.WARNING, "", 0, msg, None, info)


def test_logfmt_quotes_what_needs_quoting() -> None:
    line = LogfmtFormatter("master").format(_record('submitted "iot" ok'))
    ts, rest = line.split(" ", 1)
    assert ts.startswith("ts=") and ts.endswith("Z")
    assert rest.startswith("level=WARNING role=master pid=")
    assert rest.endswith('logger=headwater.master msg="submitted \\"iot\\" ok"')


def test_json_lines_carry_the_traceback() -> None:
    doc = json.loads(JsonFormatter("agent").format(_record("failed", exc=True)))
    assert (doc["level"], doc["role"], doc["logger"], doc["msg"]) == (
        "WARNING",
        "agent",
        "headwater.master",
        "failed",
    )
    assert "ValueError: boom" in doc["exc"]


def test_an_unknown_format_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match="use 'logfmt' or 'json'"):
        setup("master")
