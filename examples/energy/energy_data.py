"""The energy example's readings, made from (site, meter, seq) alone, and what they must land as.

``messages`` is what ``meters.py`` publishes: every meter's readings, seq by seq, with a
few MQTT redeliveries (a reading sent twice) and a few malformed records per site. The
rest recomputes, offline and by the example's rules as its README states them, what the
pipeline lands: ``meters_rows`` (each reading once, with ``low_voltage``),
``grid_event_rows`` (a ``sag`` where a meter's voltage drops below 207 V, a ``recover``
where it is back) and ``dead_letter_reasons``. Pure functions: no clock, no randomness.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

BASE_MS = 1_767_643_200_000  # 2026-01-05 20:00 UTC: a run of 40 readings spans two dates
STEP_MS = 15 * 60_000  # a reading per meter every 15 minutes (its kwh: that interval's)
SAG_V = 207.0
# per site, after the round of readings with this seq: (topic, payload, dead letter reason)
BAD = {
    2: ("meters/{site}/{site}-m0", b"not json at all", "Expecting value"),
    4: (
        "meters/{site}/{site}-m0",
        b'{"meter_id": "{site}-m0", "site": "{site}", "seq": 99, "ts": 1}',
        "missing field 'kwh'",
    ),
    6: (
        "meters/{site}/{site}-m1",
        b'{"meter_id": "{site}-m1", "site": "{site}", "seq": 99, "ts": 1, "kwh": 0.1, '
        b'"voltage": "high"}',
        "voltage must be a finite number",
    ),
    8: (
        "meters/{site}/{site}-m0",
        b'{"meter_id": "{site}-m0", "site": "{site}", "seq": 99, "ts": 1, "kwh": -0.5, '
        b'"voltage": 230}',
        "kwh must not be negative, got -0.5",
    ),
    10: (
        "meters/{site}/{site}-m1",
        b'{"meter_id": "{site}-m0", "site": "{site}", "seq": 99, "ts": 1, "kwh": 0.1, '
        b'"voltage": 230}',
        "is not meters/{site}/{site}-m0, the reading's own",
    ),
}
REDELIVERED_AT = 3  # after this round, each site's first meter sends its seq 1 again


def site_name(site: int) -> str:
    return f"site{site}"


def meter_name(site: int, meter: int) -> str:
    return f"site{site}-m{meter}"


def reading(site: int, meter: int, seq: int) -> dict[str, Any]:
    """Meter ``meter`` of site ``site``'s reading ``seq``: a sag (below 207 V) where
    ``(seq + 3 meter + 5 site) % 19`` is 7 or 8, else 228 to 232 V."""
    if (seq + 3 * meter + 5 * site) % 19 in (7, 8):
        voltage = 190.0 + ((seq + meter) % 7) * 2.0
    else:
        voltage = 228.0 + ((seq * 13 + meter * 7 + site * 3) % 9) * 0.5
    return {
        "meter_id": meter_name(site, meter),
        "site": site_name(site),
        "seq": seq,
        "ts": BASE_MS + seq * STEP_MS,
        "kwh": round(0.05 + 0.01 * ((seq * 7 + meter * 3 + site * 5) % 23), 3),
        "voltage": voltage,
    }


def topic(r: dict[str, Any]) -> str:
    return f"meters/{r['site']}/{r['meter_id']}"


def _bad(site: int, at: int) -> tuple[str, bytes, str]:
    name = site_name(site)
    where, payload, reason = BAD[at]
    return (
        where.format(site=name),
        payload.replace(b"{site}", name.encode()),
        reason.format(site=name),
    )


def messages(sites: int, meters: int, count: int) -> Iterator[tuple[str, bytes]]:
    """``(topic, payload)`` in publishing order: round by round (seq), site by site."""
    for seq in range(count):
        for s in range(sites):
            for m in range(meters):
                r = reading(s, m, seq)
                yield topic(r), json.dumps(r).encode()
            if seq == REDELIVERED_AT:
                r = reading(s, 0, 1)
                yield topic(r), json.dumps(r).encode()
            if seq in BAD:
                where, payload, _ = _bad(s, seq)
                yield where, payload


def _date(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts / 1000, dt.UTC).strftime("%Y-%m-%d")


def meters_rows(sites: int, meters: int, count: int) -> list[dict[str, Any]]:
    """Every reading once as the landing holds it (with its partitions, ``date`` and
    ``site``), unscored: no model rolled out (``predicted_kwh`` None, ``model_version`` "")."""
    return [
        {
            **(r := reading(s, m, seq)),
            "low_voltage": r["voltage"] < SAG_V,
            "predicted_kwh": None,
            "model_version": "",
            "date": _date(r["ts"]),
        }
        for s in range(sites)
        for m in range(meters)
        for seq in range(count)
    ]


def grid_event_rows(sites: int, meters: int, count: int) -> list[dict[str, Any]]:
    """Each meter's sags and recoveries, as the landing holds them."""
    out = []
    for s in range(sites):
        for m in range(meters):
            low = False
            for seq in range(count):
                r = reading(s, m, seq)
                now = r["voltage"] < SAG_V
                if now != low:
                    kind = "sag" if now else "recover"
                    out.append(
                        {
                            **{k: r[k] for k in ("meter_id", "site", "ts", "voltage")},
                            "kind": kind,
                            "date": _date(r["ts"]),
                        }
                    )
                low = now
    return out


def dead_letter_reasons(sites: int, count: int) -> list[str]:
    """A part of each dead letter's reason, sorted: the malformed records a run publishes."""
    return sorted(_bad(s, at)[2] for s in range(sites) for at in BAD if at < count)


def unexplained(reasons: list[str], sites: int, count: int) -> list[str]:
    """What does not match between the dead letters' ``reasons`` and those a run of ``sites``
    and ``count`` makes (each a part of one reason): [] when they are the same."""
    left = list(reasons)
    missing = []
    for want in dead_letter_reasons(sites, count):
        hit = next((r for r in left if want in r), None)
        if hit is None:
            missing.append(f"no dead letter says {want!r}")
        else:
            left.remove(hit)
    return missing + [f"unexpected dead letter: {r!r}" for r in left]


def redeliveries(sites: int, count: int) -> int:
    """The readings a run publishes twice (the pipeline drops the second)."""
    return sites if count > REDELIVERED_AT else 0
