"""The README's first command: `headwater demo` runs the IoT path and the Spark loop, and stops.

The demo runs until it is interrupted: the test reads its output as it comes,
waits (with a deadline) until the model it trained is live on both sites, then
sends SIGINT as Ctrl-C would and expects a clean stop.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading

import pytest

from tests._wait import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]


def test_demo_runs_the_loop_and_stops() -> None:
    # the embedded broker: what a fresh machine without Mosquitto gets
    proc = subprocess.Popen(
        [sys.executable, "-m", "headwater", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HEADWATER_DEMO_BROKER": "embedded"},
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_for(
            lambda: (
                any("rollout: " in ln and "done: all live" in ln for ln in lines)
                or proc.poll() is not None
            ),
            480,
            "the demo's model live on both sites",
        )
        assert proc.poll() is None, "".join(lines)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(120) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    if proc.stdout is not None:
        proc.stdout.close()
    out = "".join(lines)
    assert "MQTT: embedded broker (amqtt) on 127.0.0.1:" in out
    assert "running 'iot' on a master, a cloud worker and 2 edge agents" in out
    assert "master API: http://127.0.0.1:" in out
    assert "agents and their backlogs: http://127.0.0.1:" in out
    assert "  site0 window " in out and "  site1 window " in out
    assert "3 sensors, 6 readings" in out  # a closed 10 s window of 3 sensors (5 s a reading)
    assert "dead letters so far: " in out
    assert "gw-site0 online" in out and "gw-site1 online" in out
    last = [line for line in out.splitlines() if "latest complete" in line][-1]
    assert int(last.rsplit(" ", 1)[1]) > 0  # cloud checkpoints completed
    # the loop: rollups, a model trained and registered, rolled out to site0, then both
    assert "    site0 hour " in out and "    site1 hour " in out
    assert "train: trained iot-anomaly" in out
    assert "train: registered iot-anomaly version 1" in out
    phases = re.findall(r"^  rollout: \+\s*[\d.]+s  ([a-z_]+)", out, re.M)
    assert phases == [
        *("requested", "canary", "canary", "watching", "promoting", "promoting", "done")
    ], out
    assert "canary (revision 2): canary live" in out
    assert "promoting (revision 3): all live" in out
    assert out.rstrip().endswith("stopped")
