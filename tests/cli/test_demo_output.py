"""What `headwater demo` prints: its clock, said in UTC with its speed-up, the table of
every closed site window, where to look (the console and how to log in, URLs of real
routes), the sensor broken on purpose and why its letters died, and when the model will
train (the demo itself runs in tests/integration/test_demo.py)."""

from __future__ import annotations

import asyncio
import calendar
import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aiohttp.test_utils import make_mocked_request

from headwater import DeadLetter
from headwater._demo.hints import (
    BROKEN_PAYLOAD,
    BROKEN_REASON,
    BROKEN_TOPIC,
    DeadLetters,
    broken_sensor,
    where_to_look,
)
from headwater._demo.loop import HISTORY_READINGS, SparkLoop
from headwater._demo.run import WINDOW_HEADER, DemoClock, closed_windows, window_line
from headwater._demo.sensors import injected, readings
from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master

from .._iot import iot_steps

# 2026-11-24 04:17:30 UTC
WALL0 = calendar.timegm((2026, 11, 24, 4, 17, 30, 0, 0, 0))


def test_the_clock_starts_at_an_hour_two_hours_back_and_runs_ten_times_as_fast() -> None:
    clock = DemoClock(WALL0)
    start = calendar.timegm((2026, 11, 24, 2, 0, 0, 0, 0, 0)) * 1000
    assert clock.ts(0) == start
    assert clock.ts(12) == start + 60_000  # a reading every 5 s of event time
    assert clock.due(0) == WALL0
    assert clock.due(12) == WALL0 + 6.0  # a minute of event time in 6 s
    # 2 h 17 min 30 s behind: caught up after 8250 / 9 s; from then on, the real time
    caught_up = WALL0 + 8250 / 9
    seq = 2000  # 10,000 s of event time: past the catch-up
    assert clock.ts(seq) / 1000 > caught_up
    assert clock.due(seq) == clock.ts(seq) / 1000
    assert all(clock.due(n) < clock.due(n + 1) for n in range(0, 3000, 7))
    assert clock.describe() == (
        "  clock: the sensors' event time starts at 2026-11-24 02:00:00 UTC (2.3 h ago) and "
        "runs 10x the wall clock (a reading per sensor every 5 s of event time, 2 a second) "
        "until it reaches the real time, in about 15 min; then it keeps real time"
    )


def _row(site: str, w: int, sensors: int, count: int = 6) -> list[Any]:
    return [f"{site}/{w}", site, w, sensors, count, 20.5, 18.25, 23.0, 1]


def test_a_window_is_shown_once_when_every_sensor_of_its_site_closed_it() -> None:
    base = 1_700_000_000_000
    rows = [
        _row("site0", base, 3),
        _row("site1", base, 3),
        _row("site0", base + 10_000, 2),  # a sensor still to merge in: not yet
        _row("site1", base + 10_000, 3),
        _row("site1", base + 20_000, 1),
    ]
    got = closed_windows(rows, set(), 3)
    assert [r[0] for r in got] == [
        f"site0/{base}",
        f"site1/{base}",
        f"site1/{base + 10_000}",
    ]
    shown = {r[0] for r in got}
    assert closed_windows(rows, shown, 3) == []
    # three windows later, a window a sensor never reached is shown as it stands
    rows.append(_row("site0", base + 40_000, 3))
    assert [r[0] for r in closed_windows(rows, shown, 3)] == [
        f"site0/{base + 10_000}",
        f"site0/{base + 40_000}",
    ]


def test_a_window_is_a_row_of_the_table_in_utc() -> None:
    row = _row("site0", 1_700_000_000_000, 3)
    assert window_line(row) == (
        "  site0  2023-11-14 22:13:20-22:13:30Z        3        6   20.50   18.25   23.00         1"
    )
    assert WINDOW_HEADER == (
        "  site   window (UTC)                   sensors readings    mean     min     max anomalies"
    )
    assert len(WINDOW_HEADER) == len(window_line(row))


def test_the_sites_readings_differ_and_stay_deterministic() -> None:
    """Not site0's figures plus 4: each site has a wave, noise and anomalies of its own."""
    first = list(readings(2, 3, 200))
    assert first == list(readings(2, 3, 200))
    by_site: dict[str, list[float]] = {"site0": [], "site1": []}
    for _, r in first:
        by_site[r["site"]].append(r["value"])
    gaps = {round(b - a, 3) for a, b in zip(by_site["site0"], by_site["site1"], strict=True)}
    assert len(gaps) > 100
    hot = {
        site: {r["seq"] for _, r in first if r["site"] == site and r["sensor"].endswith("-0")}
        for site in by_site
    }
    spikes = {site: {seq for seq in hot[site] if injected(site, seq)} for site in hot}
    assert spikes == {"site0": {6, 43, 80, 117, 154, 191}, "site1": {24, 61, 98, 135, 172}}


def test_the_demo_cli_defaults_to_the_demos_own_speedup() -> None:
    from headwater._cli import _parser as build_parser
    from headwater._demo.run import SPEEDUP

    args = build_parser().parse_args(["demo"])
    assert args.speedup == SPEEDUP
    assert build_parser().parse_args(["demo", "--speedup", "25"]).speedup == 25


def test_the_start_up_names_the_console_with_its_login_and_every_url_in_full(
    tmp_path: Path,
) -> None:
    http = "http://127.0.0.1:7071"
    lines = where_to_look(http, "0a1b2c.s3cret", Path("/w/master/admin.token"))
    t = f"{http}/api/v1/topologies/iot"
    assert lines == [
        f"  web console: {http}/ (log in with the operator token 0a1b2c.s3cret)",
        f"  master API: {t} (also {t}/metrics, {t}/checkpoints)",
        f"  agents and their backlogs: {http}/api/v1/nodes",
        "  the API's token (admin): export HEADWATER_TOKEN=$(cat /w/master/admin.token)",
    ]
    # every path a hint names is a route of the master's app (the demo checks they answer)
    urls = re.findall(r"http://\S+?(?=[,)\s]|$)", "\n".join(lines))
    assert len(urls) == 5

    async def routed() -> list[str]:
        app = make_app(Master(tmp_path / "state"))
        found = []
        for url in urls:
            info = await app.router.resolve(make_mocked_request("GET", url[len(http) :], app=app))
            resource = info.route.resource
            found.append("404" if resource is None else resource.canonical)
        return found

    assert asyncio.run(routed()) == [
        "/",
        "/api/v1/topologies/{name}",
        "/api/v1/topologies/{name}/metrics",
        "/api/v1/topologies/{name}/checkpoints",
        "/api/v1/nodes",
    ]


def test_the_broken_sensor_is_announced_with_the_reason_parse_gives() -> None:
    assert broken_sensor() == (
        '  broken on purpose: sensors/site1/broken sends {"site": "site1", "value": "hot"} '
        "every 16 ticks (a firmware bug: no sensor, seq or ts); the edge's parse step refuses "
        "each such record (missing field 'sensor') and sends it to the dead letters, so the "
        "console shows parse in red with its count"
    )
    with pytest.raises(DeadLetter) as refused:
        iot_steps.parse(BROKEN_TOPIC, BROKEN_PAYLOAD)
    assert str(refused.value) == BROKEN_REASON


def _land_dead_letters(landing: Path, seq: int, rows: list[tuple[str, str]]) -> None:
    """A published manifest ``seq`` of the dead-letter dataset, as ``LandingSink`` writes it."""
    folder = landing / "dead_letters"
    rel = f"date=2026-11-24/part-{seq:08d}-0.parquet"
    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    (folder / "_manifests").mkdir(exist_ok=True)
    table = pa.table(
        {
            "component": [c for c, _ in rows],
            "reason": [r for _, r in rows],
            "traceback": [""] * len(rows),
            "record": ["{}"] * len(rows),
        }
    )
    pq.write_table(table, folder / rel)
    doc = {"seq": seq, "files": [{"path": rel, "rows": len(rows)}], "rows": len(rows)}
    (folder / "_manifests" / f"{seq:012d}.json").write_text(json.dumps(doc))


def test_the_dead_letter_line_names_the_commonest_reasons(tmp_path: Path) -> None:
    letters = DeadLetters(tmp_path)
    letters.update()
    assert letters.line() == "0"
    broken = ("parse", "missing field 'sensor'")
    _land_dead_letters(tmp_path, 1, [broken, broken])
    letters.update()
    assert letters.line() == "2 (parse: missing field 'sensor' x2)"
    _land_dead_letters(
        tmp_path,
        2,
        [
            broken,
            ("dedup", "seq 900000 is 899990 ahead"),
            ("parse", "value must be a finite number"),
            ("parse", "value must be a finite number"),
            ("parse", "a reading must be a JSON object"),
        ],
    )
    letters.update()
    assert letters.line() == (
        "7 (parse: missing field 'sensor' x3; parse: value must be a finite number x2; "
        "dedup: seq 900000 is 899990 ahead x1; 1 other)"
    )


def test_the_demo_says_when_the_model_trains_and_what_it_waits_for(tmp_path: Path) -> None:
    said: list[str] = []
    loop = SparkLoop(tmp_path, tmp_path / "out", "http://h", tmp_path / "t", said.append, 12.0)
    loop.start()
    assert said[-1] == (
        "  model: `headwater spark train` fits `iot-anomaly` once 1,500 readings have landed "
        "(in about 2 min at 12 readings a second); its progress shows here (a line per stage: "
        "starting Spark, reading the landing, fitting, evaluating, exporting, registering); "
        "then it is rolled out to site0 (canary), then to both sites"
    )
    manifests = tmp_path / "out" / "landing" / "readings" / "_manifests"
    manifests.mkdir(parents=True)
    (manifests / f"{1:012d}.json").write_text(json.dumps({"seq": 1, "files": [], "rows": 840}))
    loop.report()
    assert said[-1] == (
        "  model: waiting for history: 840 of 1,500 readings landed (training in about 55 s)"
    )
    assert HISTORY_READINGS == 1500
