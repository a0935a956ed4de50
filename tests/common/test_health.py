from __future__ import annotations

import logging

import pytest

from headwater.common._health import DEGRADED, FAILED, Health


def test_state_is_the_worst_reason_and_clears() -> None:
    h = Health("n")
    assert (h.state, h.reasons()) == ("ok", [])
    h.set("mqtt", DEGRADED, "broker 127.0.0.1:1 unreachable")
    h.set("disk", FAILED, "no space left")
    assert h.state == "failed"
    assert h.reasons() == ["disk: no space left", "mqtt: broker 127.0.0.1:1 unreachable"]
    h.clear("disk")
    assert h.state == "degraded" and h.has("mqtt") and not h.has("disk")
    h.clear("mqtt")
    h.clear("mqtt")  # clearing twice is harmless
    assert h.state == "ok"


def test_a_repeated_reason_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    h = Health("n")
    with caplog.at_level(logging.INFO, logger="headwater.health"):
        for _ in range(5):
            h.set("mqtt", DEGRADED, "away")
        h.clear("mqtt")
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]
