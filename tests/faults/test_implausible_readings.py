"""Finding 6: a future sequence number must not silence a sensor. The IoT example defends itself.

One reading of sensor s0-1 with seq 99,999,999 (dedup would drop every later reading of
that sensor as a repeat), one with seq 2**64 (the wire codec cannot carry it), and one of
s0-2 stamped 5 h past its arrival. Each is dead-lettered once with its reason, and the
sensors' later readings still flow: every closed window is what the good readings give.
Both versions of the example, through a real Mosquitto and ``headwater run``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ..integration._support import EXAMPLES, landed_dead_letters, running, wait_for
from ..integration.test_iot import SENSORS, _expected, _ingest, _site_rows
from . import _report

pytestmark = pytest.mark.cluster
BASE_TS = SENSORS["BASE_TS"]


def _bad(seq: int, ts: int, sensor: str = "s0-1") -> tuple[str, bytes]:
    reading = {"site": "site0", "sensor": sensor, "seq": seq, "ts": ts, "value": 20.0}
    return f"sensors/site0/{sensor}", json.dumps(reading).encode()


@pytest.mark.parametrize("file", ["pipeline.py", "pipeline_dsl.py"])
def test_implausible_readings_are_dead_lettered_and_the_sensor_goes_on(
    mosquitto: tuple[str, int], tmp_path: Path, file: str
) -> None:
    log, out = tmp_path / "ingest", tmp_path / "out"
    readings = list(SENSORS["readings"](2, 3, 60))
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    split = next(i for i, (_, r) in enumerate(readings) if r["seq"] == 30)
    first, later = messages[:split], messages[split:]
    ahead = int(time.time() * 1000) + 5 * 3_600_000
    first += [
        _bad(99_999_999, BASE_TS + 29_500),
        _bad(2**64, BASE_TS + 29_600),
        _bad(29, ahead, sensor="s0-2"),
    ]
    expected = _expected([r for _, r in readings])
    env = {"IOT_LOG": str(log), "IOT_OUT": str(out), "IOT_PARTITIONS": "2"}

    def dead() -> list[Any]:
        return landed_dead_letters(out)

    def windows() -> dict[str, Any]:
        rows = _site_rows(out / "site_windows")
        if file == "pipeline_dsl.py":  # records are [key, value]: the value is the row
            rows = {k: v[1] for k, v in rows.items()}
        return rows

    with running(EXAMPLES / "iot" / file, env=env) as c:
        t0 = time.monotonic()
        _ingest(mosquitto, log, first)
        wait_for(lambda: len(dead()) >= 3, 60, "the three implausible readings dead-lettered")
        detect_s = time.monotonic() - t0
        t1 = time.monotonic()
        _ingest(mosquitto, log, later)
        wait_for(
            lambda: windows() == expected,
            60,
            "every closed window, the later readings of s0-1 and s0-2 in it",
        )
        recover_s = time.monotonic() - t1
        # the reports reach /exceptions with the containers' heartbeats
        exceptions = wait_for(
            lambda: (e := c.get("/exceptions")) and len(e) >= 3 and e,
            30,
            "the dead letters listed under /exceptions",
        )
        letters = dead()

    dedup = "last_seq" if file == "pipeline_dsl.py" else "dedup"
    future = next(d for d in letters if d[1].startswith(f"ts {ahead} "))
    received_ms = future[3][2]  # the record: [topic, payload, received_ms]
    assert Counter((d[0], d[1]) for d in letters) == Counter(
        {
            (dedup, "seq 99999999 is 99999970 ahead of the sensor's last (29); at most 100000"): 1,
            ("parse", f"seq and ts must be below 2**63, got seq {2**64}, ts {BASE_TS + 29_600}"): 1,
            ("parse", f"ts {ahead} is 5.0 h ahead of its arrival ({received_ms}); at most 1 h"): 1,
        }
    ), letters
    assert all(d[2] == "" for d in letters)  # refused (DeadLetter): a reason, no traceback
    assert len(expected) == 2 * 5
    assert sum(e["message"].startswith("dead letter") for e in exceptions) == 3, exceptions
    rows = windows()
    _report.record(
        f"implausible readings ({file})",
        detect_s=round(detect_s, 2),
        recover_s=round(recover_s, 2),
        readings=len(readings) + 3,
        lost=len(set(expected) - set(rows)),
        duplicated=0,
    )
