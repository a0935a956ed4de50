"""Finding 3: one bad record must not stop a site. Poison records through real processes.

Readings go through a real Mosquitto into the durable ingest log, and ``headwater run``
runs the IoT example's parse and dedup plus a step that raises on one sensor
(``topologies/poison.py``), as bolts and as fused DSL steps, in each reliability mode.
Poison: a deeply nested JSON payload (``json.loads`` raises RecursionError), a payload of
megabytes that is no reading, and every reading of the broken sensor. Each must be
dead-lettered exactly once with its component and reason, every good reading must come
out exactly once, and readings published afterwards must still flow.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ..integration._support import TOPOLOGIES, running, wait_for
from ..integration.test_iot import SENSORS, _ingest
from . import _report

pytestmark = pytest.mark.cluster
POISON = Path(__file__).parent / "topologies" / "poison.py"
BROKEN = "s1-2"
DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE = json.dumps([0] * 2_000_000).encode()  # 6 MB
assert TOPOLOGIES  # the integration kit is importable from here


def rows(directory: Path) -> list[Any]:
    """Complete JSON lines of every ``part-*.jsonl`` (an append sink may be mid-line)."""
    out: list[Any] = []
    for f in sorted(directory.glob("part-*.jsonl")) if directory.exists() else ():
        out.extend(json.loads(line) for line in f.read_text().split("\n")[:-1])
    return out


# where each component's dead letters are counted: the DSL fuses parse into the source and
# check into the dedup chain
COUNTED = {
    "components": {"parse": (2, 3), "dedup": (0, 0), "check": (40, 120)},
    "dsl": {"readings": (2, 3), "dedup": (40, 120)},
}


@pytest.mark.parametrize("api", ["components", "dsl"])
@pytest.mark.parametrize("mode", ["ATMOST_ONCE", "ATLEAST_ONCE", "EFFECTIVELY_ONCE"])
def test_poison_records_are_dead_lettered_once_and_the_rest_flows(
    mosquitto: tuple[str, int], tmp_path: Path, mode: str, api: str
) -> None:
    log, out = tmp_path / "ingest", tmp_path / "out"
    readings = list(SENSORS["readings"](2, 3, 40))
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    first = [m for m, (_, r) in zip(messages, readings, strict=True) if r["seq"] < 20]
    later = [m for m, (_, r) in zip(messages, readings, strict=True) if r["seq"] >= 20]
    first[50:50] = [("sensors/site0/deep", DEEP), ("sensors/site0/huge", HUGE)]
    good = Counter((r["sensor"], r["seq"]) for _, r in readings if r["sensor"] != BROKEN)
    env = {"IOT_LOG": str(log), "IOT_OUT": str(out), "POISON_MODE": mode, "POISON_API": api}

    def outputs() -> Counter[tuple[str, int]]:
        got = rows(out / "out")
        return Counter((r[1][1], r[1][2]) if api == "dsl" else (r[1], r[2]) for r in got)

    def dead() -> list[Any]:
        return rows(out / "dead_letters")

    with running(POISON, env=env) as c:
        t0 = time.monotonic()
        _ingest(mosquitto, log, first)
        payloads = {"sensors/site0/deep", "sensors/site0/huge"}
        wait_for(
            lambda: {d[3][0] for d in dead() if d[0] == "parse"} >= payloads,
            60,
            "the poison payloads' dead letters",
        )
        detect_s = time.monotonic() - t0
        t1 = time.monotonic()
        _ingest(mosquitto, log, later)  # the topology still processes what follows
        wait_for(
            lambda: sum(outputs().values()) >= sum(good.values()),
            60,
            "every good reading, published before and after the poison",
        )
        recover_s = time.monotonic() - t1
        wait_for(lambda: len(dead()) >= 42, 30, "every dead letter")

        def counted() -> dict[str, tuple[int, int]]:
            m = c.metrics()["components"]
            return {
                comp: (int(m[comp]["dead_letters"]), int(m[comp]["record_retries"]))
                for comp in COUNTED[api]
            }

        wait_for(lambda: counted() == COUNTED[api], 30, f"the metrics {COUNTED[api]}")
        if mode == "ATLEAST_ONCE" and api == "components":  # every record's tree completed
            spout = c.metrics()["components"]["readings"]
            wait_for(
                lambda: c.metrics()["components"]["readings"]["acked"] == len(messages) + 2,
                30,
                "every record acked, the dead-lettered ones too",
            )
            assert spout["failed"] == 0

        # the reports reach /exceptions with the containers' heartbeats
        def listed() -> Counter[str]:
            return Counter(
                e["component"]
                for e in c.get("/exceptions")
                if e["message"].startswith("dead letter")
            )

        wait_for(
            lambda: listed()["parse"] == 2 and listed()["check"] >= 10,
            30,
            "the dead letters listed under /exceptions",
        )
        exceptions = c.get("/exceptions")
        got, letters = outputs(), dead()

    assert got == good  # every good reading exactly once
    by_reason = Counter(
        (d[0], d[1].split(" (")[0], d[3][0] if d[0] == "parse" else d[3][1]) for d in letters
    )
    assert by_reason == Counter(
        {
            (
                "parse",
                "RecursionError: maximum recursion depth exceeded while decoding a JSON "
                "array from a unicode string",
                "sensors/site0/deep",
            ): 1,
            ("parse", "a reading must be a JSON object", "sensors/site0/huge"): 1,
            ("check", f"ValueError: sensor {BROKEN} is broken", BROKEN): 40,
        }
    )
    assert sorted(d[3][2] for d in letters if d[0] == "check") == list(range(40))
    recursion = next(d for d in letters if d[3][0] == "sensors/site0/deep")
    assert "RecursionError" in recursion[2] and len(recursion[2]) <= 2003  # a short traceback
    assert len(next(d for d in letters if d[3][0] == "sensors/site0/huge")[3][1]) == len(HUGE)
    # reported under /exceptions, bounded per instance
    reported = Counter(e["component"] for e in exceptions if e["message"].startswith("dead letter"))
    assert reported["parse"] == 2 and 10 <= reported["check"] < 40
    assert any("RecursionError" in e["message"] for e in exceptions)
    _report.record(
        f"poison records ({api}, {mode})",
        detect_s=round(detect_s, 2),
        recover_s=round(recover_s, 2),
        readings=len(readings),
        lost=sum((good - got).values()),
        duplicated=sum((got - good).values()),
    )


@pytest.mark.parametrize("api", ["components", "dsl"])
def test_exactly_once_decides_the_same_after_a_rollback(
    mosquitto: tuple[str, int], tmp_path: Path, api: str
) -> None:
    """The instance that dead-letters is killed mid-stream: the domain rolls back and replays
    the poison records; what is committed still holds each dead letter once and each good
    reading once (a record a retry saved, once, with no dead letter)."""
    log, out = tmp_path / "ingest", tmp_path / "out"
    readings = list(SENSORS["readings"](2, 3, 40))
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    first = [m for m, (_, r) in zip(messages, readings, strict=True) if r["seq"] < 20]
    later = [m for m, (_, r) in zip(messages, readings, strict=True) if r["seq"] >= 20]
    first[50:50] = [("sensors/site0/deep", DEEP)]
    good = Counter((r["sensor"], r["seq"]) for _, r in readings if r["sensor"] != BROKEN)
    env = {
        "IOT_LOG": str(log),
        "IOT_OUT": str(out),
        "POISON_MODE": "EFFECTIVELY_ONCE",
        "POISON_API": api,
        "POISON_FLAKY": "1",
    }
    checker = "check" if api == "components" else "dedup"

    def outputs() -> Counter[tuple[str, int]]:
        got = rows(out / "out")
        return Counter((r[1][1], r[1][2]) if api == "dsl" else (r[1], r[2]) for r in got)

    with running(POISON, env=env) as c:
        _ingest(mosquitto, log, first)
        wait_for(
            lambda: sum(d[0] == "check" for d in rows(out / "dead_letters")) >= 5,
            60,
            "some of the broken sensor's dead letters committed",
        )
        victim = next(
            int(m["pid"])
            for m in c.metrics()["tasks"].values()
            if m["component"] == checker and "pid" in m
        )
        killed = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        _ingest(mosquitto, log, later)
        wait_for(
            lambda: (
                sum(outputs().values()) >= sum(good.values())
                and len(rows(out / "dead_letters")) >= 41
            ),
            90,
            "every good reading and every dead letter after the rollback",
        )
        recover_s = time.monotonic() - killed
        restarts = c.metrics()["components"][checker]["restarts"]
        got, letters = outputs(), rows(out / "dead_letters")

    assert restarts >= 1  # the kill happened and the domain replayed
    assert got == good
    expected: Counter[tuple[str, Any]] = Counter([("parse", "sensors/site0/deep")])
    expected.update(("check", (BROKEN, seq)) for seq in range(40))
    assert (
        Counter((d[0], d[3][0] if d[0] == "parse" else (d[3][1], d[3][2])) for d in letters)
        == expected
    )
    _report.record(
        f"poison records, instance killed, replayed ({api}, EFFECTIVELY_ONCE)",
        detect_s=None,
        recover_s=round(recover_s, 2),
        readings=len(readings),
        lost=sum((good - got).values()),
        duplicated=sum((got - good).values()),
    )
