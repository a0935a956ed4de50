"""Issue 35's skew scenario for the health manager, with real daemons.

``topologies/skew.py``: ``counter`` (3 tasks under a fields grouping on ``key``) costs COST s
per record. The log is written at RATE records/s, HOT_SHARE of them under one key, which the
grouping sends to one task (the hot one: a little more than it keeps up with, so busy all
the time), the rest under 8 cold keys that go to the two other tasks (nearly idle). The
master samples every second and the policy is ``auto`` (cooldown 5 s, stabilization 20 s,
at most 6 tasks). The health manager must diagnose ``skew`` on ``counter`` on every tick
once it has (OBSERVE_S; never another diagnosis, an under-provisioned one being a rescale at
once), naming the hot task and the hot key alone with the share of the load it carries, in
the REST report, `headwater health skew --json` and the text; take reports only, make no
rescale, black-list nothing; and every record is counted once, exactly (exactly-once mode).

Measured (``bench/RESULTS.md``, "Self-regulation: a skewed key (issue 35)", with
``PYTHONPATH=$PWD timeout 300 python -m pytest tests/integration/test_health_skew.py -x -q
-s`` on a shared 2-core machine, load average 12-18; the test prints its trace, a ``SKEW``
summary and the text report): in each of five runs skew diagnosed 5-14 s after the writer
started (later when the start's backlog reached the cold tasks too), then on every tick
(32 readings) and nothing else; the hot key's share of the load 0.53-0.75 on the first ticks
(their window begins before the load), 0.74-0.84 once it is all load (0.8 written); the hot
task busy 1.0, its siblings 0.10-0.18; 4 reports, no revision; 35-64 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from bench.health_load import Writer as HealthWriter
from headwater.common.connectors._log_spout import append_records
from headwater.common.plan._routing import key_hash

from ._daemons import Daemons
from ._support import TOPOLOGIES, committed_rows, wait_for

pytestmark = pytest.mark.cluster
TASKS = 3  # counter's, as topologies/skew.py has it
COST = 0.02  # s per record: one task keeps up with about 45 records/s
RATE = 70  # records/s, HOT_SHARE of them (56/s) to the hot task
HOT_SHARE = 0.8
PAD = "x" * 256
OBSERVE_S = 15.0  # after the first skew diagnosis: 15 ticks, 3 cooldowns
FIRST = 10  # records in the log before the topology starts
# the hot key goes to the first of counter's tasks, the cold ones to the two others
_KEYS = [f"k{i}" for i in range(100)]
HOT = next(k for k in _KEYS if key_hash(k) % TASKS == 0)
COLD = [k for k in _KEYS if key_hash(k) % TASKS == 1][:4] + [
    k for k in _KEYS if key_hash(k) % TASKS == 2
][:4]


def key_of(seq: int) -> str:
    """Of every 10 records, 8 are the hot key's and 2 a cold key's (in turn)."""
    j = seq % 10
    return HOT if j < 10 * HOT_SHARE else COLD[(seq // 10 * 2 + j - 8) % len(COLD)]


def Writer(log: Path) -> HealthWriter:
    """The bench's writer (``bench/health_load.py``: one writer kept open) at RATE records/s,
    the keys skewed by ``key_of``, after the FIRST records already in the log."""
    return HealthWriter(log, RATE, key_of, FIRST)


def _cli(daemons: Daemons, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "headwater", "health", "skew", *args],
        env={**os.environ, "HEADWATER_MASTER": daemons.http, "HEADWATER_TOKEN": daemons.token},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout


def test_a_skewed_key_is_reported_with_its_hot_key_and_nothing_is_rescaled(
    daemons: Daemons, tmp_path: Path
) -> None:
    env = {
        "HW_TEST_LOG": str(tmp_path / "log"),
        "HW_TEST_OUT": str(tmp_path / "out"),
        "HW_TEST_COST": str(COST),
    }
    daemons.start_master(extra=("--health-interval", "1"))
    daemons.start_worker("w1", env)
    wait_for(lambda: any(n["online"] for n in daemons.api("/api/v1/nodes")), 30, "a worker")
    append_records(tmp_path / "log", 0, [[key_of(i), i, PAD] for i in range(FIRST)])
    daemons.cli("submit", str(TOPOLOGIES / "skew.py"))

    def tasks() -> dict[str, Any]:
        view: dict[str, Any] = daemons.api("/api/v1/topologies/skew/metrics")["tasks"]
        return view

    def reporting() -> bool:
        ts = tasks().values()
        return len(ts) == TASKS + 2 and all("busy_ns" in v for v in ts)

    wait_for(reporting, 60, "every task reporting")  # then at once: idle, it is over-provisioned
    counters = sorted(int(t) for t, v in tasks().items() if v.get("component") == "counter")
    hot_task = counters[key_hash(HOT) % TASKS]
    writer = Writer(tmp_path / "log")
    writer.start()
    start = time.monotonic()
    seen: list[tuple[float, dict[str, Any]]] = []  # counter's diagnoses once skew was first seen
    before: list[str] = []  # the kinds of those before (idle, it is over-provisioned)

    def report() -> dict[str, Any]:
        r: dict[str, Any] = daemons.api("/api/v1/topologies/skew/health")
        for d in r["diagnoses"]:
            if d["component"] == "counter":
                if seen or (d["kind"] == "skew" and d["evidence"]["hot_keys"]):
                    seen.append((time.monotonic() - start, d))
                else:
                    before.append(d["kind"])
        return r

    try:
        wait_for(lambda: report() and seen, 45, "a skew diagnosis with its hot keys")
        end = time.monotonic() + OBSERVE_S
        while time.monotonic() < end:
            report()
            time.sleep(0.5)
        shown = json.loads(_cli(daemons, "--json"))  # while the load lasts
        text = _cli(daemons)
        last = report()
    finally:
        writer.done.set()
        writer.join()
    n = writer.n
    revisions = daemons.api("/api/v1/topologies/skew/revisions")
    for at, d in seen:
        ev = d["evidence"]
        keys = [(k["key"], k["share"], k.get("load_share")) for k in ev["hot_keys"]]
        print(
            f"TRACE {at:.1f} {d['kind']} tasks={d['tasks']} arrival={ev.get('arrival')} "
            f"siblings={ev.get('siblings_median')} busy={ev.get('busy')} "
            f"siblings_busy={ev.get('siblings_busy')} load_share={ev.get('load_share')} {keys}"
        )
    skews = [d["evidence"] for _, d in seen if d["kind"] == "skew"]
    shares = [k["load_share"] for ev in skews for k in ev["hot_keys"] if k["key"] == HOT]
    summary = {
        "diagnosed_s": round(seen[0][0], 1),
        "before": dict(Counter(before)),
        "kinds": dict(Counter(d["kind"] for _, d in seen)),
        "hot_key_load_share": [min(shares), max(shares)],
        "hot_busy": [min(ev["busy"] for ev in skews), max(ev["busy"] for ev in skews)],
        "siblings_busy": [
            min(e["siblings_busy"] for e in skews),
            max(e["siblings_busy"] for e in skews),
        ],
        "no_hot_keys": sum(1 for ev in skews if not ev["hot_keys"]),
        "revisions": [(r["revision"], r["author"]) for r in revisions["revisions"]],
        "taken": dict(Counter(t["action"]["kind"] for t in last["taken"])),
        "records": n,
    }
    print("SKEW", json.dumps(summary))
    print(text)

    # once seen, skew on counter on every tick, naming its hot task and the hot key alone
    assert {d["kind"] for _, d in seen} == {"skew"}, summary
    for _, d in seen:
        assert d["tasks"] == [hot_task], d
        assert [k["key"] for k in d["evidence"]["hot_keys"]] == [HOT], d
        assert d["evidence"]["hot_keys"][0]["share"] == 1.0, d  # the hot task takes it alone
    # the REST report and the CLI's: the share of the load the hot key carries, as written,
    # the hot task busy all the time, its siblings nearly idle
    for r in (shown, last):
        [d] = [d for d in r["diagnoses"] if d["component"] == "counter"]
        ev = d["evidence"]
        assert d["kind"] == "skew" and [k["key"] for k in ev["hot_keys"]] == [HOT], r
        assert abs(ev["hot_keys"][0]["load_share"] - HOT_SHARE) <= 0.15, summary
        assert ev["busy"] >= 0.7 and ev["siblings_busy"] <= 0.35, summary
    assert f"skew counter: task {hot_task} receives" in text, text
    assert f"hot_keys = {HOT} (" in text and "% of the load, 100% of its task's)" in text, text
    # reported, never rescaled: one revision, the reports alone, nothing black-listed
    assert revisions["current"] == 1 and len(revisions["revisions"]) == 1, summary
    assert {t["action"]["kind"] for t in last["taken"]} == {"report"}, last["taken"]
    assert all(t["revision"] is None for t in last["taken"]), last["taken"]
    assert last["blacklisted"] == [], last
    assert counters == sorted(int(t) for t, v in tasks().items() if v.get("component") == "counter")

    # every record counted once at the sink, the counts per key exact
    wait_for(lambda: len(committed_rows(tmp_path / "out" / "counter")) >= n, 60, "every record")
    rows = committed_rows(tmp_path / "out" / "counter")
    assert sorted(r[1] for r in rows) == list(range(n)), "gaps or duplicates"
    by_key: dict[str, list[list[Any]]] = defaultdict(list)
    for r in rows:
        by_key[r[0]].append(r)
    assert {k: len(v) for k, v in by_key.items()} == Counter(key_of(i) for i in range(n))
    for key, krows in by_key.items():
        krows.sort(key=lambda r: r[1])
        assert [r[2] for r in krows] == list(range(1, len(krows) + 1)), f"{key}: count broke"
