"""The README's first command: `headwater demo` runs the IoT path and the Spark loop, and stops.

The demo runs until it is interrupted: the test reads its output as it comes,
waits (with a deadline) until the model it trained is live on both sites, then
sends SIGINT as Ctrl-C would and expects a clean stop.
"""

from __future__ import annotations

import calendar
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from headwater._demo.run import WINDOW_HEADER
from tests._wait import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(840)]


def test_demo_runs_the_loop_and_stops() -> None:
    # the embedded broker: what a fresh machine without Mosquitto gets
    began = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-m", "headwater", "demo", "--speedup", "50"],  # trains sooner
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HEADWATER_DEMO_BROKER": "embedded"},
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        try:
            wait_for(
                lambda: (
                    any("rollout: " in ln and "done: all live" in ln for ln in lines)
                    or proc.poll() is not None
                ),
                660,  # Spark's start and fit beside other Spark tests on two cores
                "the demo's model live on both sites",
            )
        except AssertionError as exc:  # say how far it got (the training's progress included)
            raise AssertionError(f"{exc}; the demo printed:\n{''.join(lines)[-6000:]}") from None
        assert proc.poll() is None, "".join(lines)
        _check_the_hinted_urls("".join(lines))
        proc.send_signal(signal.SIGINT)
        assert proc.wait(120) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(10)
        if proc.stdout is not None:  # on a failure too: a pipe left open fails the next test
            proc.stdout.close()
    out = "".join(lines)
    assert "MQTT: embedded broker (amqtt) on 127.0.0.1:" in out
    assert "running 'iot' on a master, a cloud worker and 2 edge agents" in out
    assert "master API: http://127.0.0.1:" in out
    assert "agents and their backlogs: http://127.0.0.1:" in out
    # what is broken on purpose, said at the start; its records' reason in the dead letters
    assert "  broken on purpose: sensors/site1/broken sends " in out
    assert re.search(r"dead letters so far: \d+ \(parse: missing field 'sensor' x\d+", out), out
    # when the model trains and what it waits for; then its progress as it trains
    assert "  model: `headwater spark train` fits `iot-anomaly` once 1,500 readings" in out
    assert re.search(r"^  model: waiting for history: [\d,]+ of 1,500 readings landed", out, re.M)
    stages = ["starting Spark", "reading the landing", "fitting", "evaluating", "exporting"]
    at = []
    for n, stage in enumerate([*stages, "registering"], 1):
        at.append(out.index(f"  train: [{n}/6] {stage} ...\n"))
        assert re.search(rf"^  train: \[{n}/6\] {stage}: .*in [\d.]+ (s|min) \(", out, re.M), out
    assert at == sorted(at)
    # echoed as the job goes, not once it ends: the demo's reports come in between
    assert "dead letters so far" in out[at[0] : at[-1]], out
    # the clock, honestly: where it starts (UTC), how fast it runs
    clock = re.search(
        r"^  clock: the sensors' event time starts at (\d{4}-\d\d-\d\d \d\d:00:00) UTC "
        r"\([\d.]+ h ago\) and runs 50x the wall clock \(a reading per sensor every 5 s of "
        r"event time, 10 a second\) until it reaches the real time, in about \d+ min; then it "
        r"keeps real time$",
        out,
        re.M,
    )
    assert clock, out
    start = calendar.timegm(time.strptime(clock[1], "%Y-%m-%d %H:%M:%S"))
    assert 2 * 3600 <= began - start < 3 * 3600 + 60
    # every closed window of each site, once, in a table: consecutive from the clock's start
    assert WINDOW_HEADER in out.splitlines()
    rows = re.findall(
        r"^  (site[01]) +(\S+ \S+)-(\S+)Z +(\d+) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +(\d+)$",
        out,
        re.M,
    )
    windows: dict[str, list[int]] = {"site0": [], "site1": []}
    means: dict[tuple[str, int], float] = {}
    for site, since, _until, sensors, count, mean, *_ in rows:
        w = calendar.timegm(time.strptime(since, "%Y-%m-%d %H:%M:%S"))
        windows[site].append(w)
        means[site, w] = float(mean)
        assert (sensors, count) == ("3", "6")  # 3 sensors, 2 readings each (5 s a reading)
    for site, starts in windows.items():
        assert len(starts) > 30, (site, out)
        assert starts == list(range(start, start + 10 * len(starts), 10)), (site, starts)
    # the sites differ: not site0's figures shifted by a constant
    both = [w for w in windows["site0"] if ("site1", w) in means]
    assert len({round(means["site1", w] - means["site0", w], 2) for w in both}) > 20
    assert "dead letters so far: " in out
    assert "gw-site0 online" in out and "gw-site1 online" in out
    last = [line for line in out.splitlines() if "latest complete" in line][-1]
    assert int(last.rsplit(" ", 1)[1]) > 0  # cloud checkpoints completed
    # the loop: rollups, a model trained and registered, rolled out to site0, then both
    assert re.search(r"^    site0 hour \d{4}-\d\d-\d\d \d\d:00 UTC: ", out, re.M), out
    assert re.search(r"^    site1 hour \d{4}-\d\d-\d\d \d\d:00 UTC: ", out, re.M), out
    assert "train: trained iot-anomaly" in out
    assert "train: registered iot-anomaly version 1" in out
    phases = re.findall(r"^  rollout: \+\s*[\d.]+s  ([a-z_]+)", out, re.M)
    assert phases == [
        *("requested", "canary", "canary", "watching", "promoting", "promoting", "done")
    ], out
    assert "canary (revision 2): canary live" in out
    assert "promoting (revision 3): all live" in out
    assert out.rstrip().endswith("stopped")


def _check_the_hinted_urls(out: str) -> None:
    """Every URL the demo's start-up names answers 200, with the token it says to log in with;
    the admin token file it names works for the API too."""
    startup = out[: out.index("  stop with Ctrl-C")]
    console = re.search(
        r"^  web console: (http://127\.0\.0\.1:\d+/) \(log in with the operator token (\S+)\)$",
        startup,
        re.M,
    )
    assert console, startup
    admin = re.search(r"export HEADWATER_TOKEN=\$\(cat (\S+)\)$", startup, re.M)
    assert admin, startup
    urls = re.findall(r"http://\S+?(?=[,)\s]|$)", startup)
    assert len(urls) == 5, urls  # the console, the topology, its metrics and checkpoints, nodes
    for url in urls:
        for token in (console[2], Path(admin[1]).read_text().strip()):
            req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.status == 200, url
