"""Event-time window sums per key: ``inputs`` are ``[key, ts, value]`` records.

Settings: ``window`` (``["tumbling", size]``, ``["sliding", size, slide]`` or
``["session", gap]``), ``ooo`` (out-of-orderness) and ``lateness``. The sink ``sink``
gets ``[key, start, end, sum]`` per fired window; ``sink_late`` the records too late.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from _modes import JsonSink

from headwater import Topology
from headwater.dsl import Pipeline, Session, Sliding, Tumbling

ASSIGNERS = {"tumbling": Tumbling, "sliding": Sliding, "session": Session}


def add(a: list[Any], b: list[Any]) -> list[Any]:
    return [a[0], max(a[1], b[1]), a[2] + b[2]]


def build(case: dict[str, Any]) -> Topology:
    x = case["suffix"]
    kind, *sizes = case["window"]
    p = Pipeline("windows")
    fired = (
        p.from_collection(f"records{x}", case["inputs"])
        .key_by(f"by_key{x}", lambda r: r[0])
        .window(
            f"sums{x}",
            ASSIGNERS[kind](*sizes),
            timestamp=lambda r: r[1],
            out_of_orderness=case["ooo"],
            lateness=case["lateness"],
        )
        .reduce(f"fired{x}", add)
    )
    fired.map(f"row{x}", lambda w: [w["key"], w["start"], w["end"], w["value"][2]]).to(
        f"sink{x}", partial(JsonSink, case["out"])
    )
    fired.late().to(f"sink_late{x}", partial(JsonSink, case["out"]))
    return p.build()
