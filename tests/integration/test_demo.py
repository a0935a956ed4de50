"""The README's first command: `headwater demo` runs the IoT path and stops cleanly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.cluster


def test_demo_runs_and_stops() -> None:
    # the embedded broker: what a fresh machine without Mosquitto gets
    proc = subprocess.run(
        [sys.executable, "-m", "headwater", "demo", "--duration", "14"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "HEADWATER_DEMO_BROKER": "embedded"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "MQTT: embedded broker (amqtt) on 127.0.0.1:" in out
    assert "running 'iot': 9 instances in 2 containers" in out
    assert "topology master: http://127.0.0.1:" in out
    assert "  site0 window " in out and "  site1 window " in out
    assert "3 sensors, 30 readings" in out  # a closed 10 s window of 3 sensors
    assert "dead letters so far: " in out
    assert "latest complete" in out  # checkpoints completed
    assert out.rstrip().endswith("stopped")
