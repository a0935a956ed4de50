"""What `headwater demo` prints: its clock, said in UTC with its speed-up, and the table of
every closed site window (the demo itself runs in tests/integration/test_demo.py)."""

from __future__ import annotations

import calendar
from typing import Any

from headwater._demo.run import WINDOW_HEADER, DemoClock, closed_windows, window_line
from headwater._demo.sensors import injected, readings

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
