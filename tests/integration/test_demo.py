"""The README's first command: `headwater demo` runs the IoT path on the daemons and stops."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.cluster


def test_demo_runs_and_stops() -> None:
    # the embedded broker: what a fresh machine without Mosquitto gets
    proc = subprocess.run(
        [sys.executable, "-m", "headwater", "demo", "--duration", "16"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HEADWATER_DEMO_BROKER": "embedded"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "MQTT: embedded broker (amqtt) on 127.0.0.1:" in out
    assert "running 'iot' on a master, a cloud worker and 2 edge agents" in out
    assert "master API: http://127.0.0.1:" in out
    assert "agents and their backlogs: http://127.0.0.1:" in out
    assert "  site0 window " in out and "  site1 window " in out
    assert "3 sensors, 30 readings" in out  # a closed 10 s window of 3 sensors
    assert "dead letters so far: " in out
    assert "gw-site0 online" in out and "gw-site1 online" in out
    assert "cloud checkpoints: latest complete" in out
    last = [line for line in out.splitlines() if "latest complete" in line][-1]
    assert int(last.rsplit(" ", 1)[1]) > 0  # cloud checkpoints completed
    assert out.rstrip().endswith("stopped")
