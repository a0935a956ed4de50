"""A window join per key: ``inputs`` are ``{"left": [...], "right": [...]}``, each a list
of ``[key, ts, value]`` records; settings ``how``, ``window`` (a tumbling size) and ``ooo``.

The sink ``sink`` gets ``[key, [left value or None, right value or None]]`` per pair.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from _modes import JsonSink

from headwater import Topology
from headwater.dsl import Pipeline, Tumbling


def pair(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    return [left and left[2], right and right[2]]


def build(case: dict[str, Any]) -> Topology:
    x = case["suffix"]
    p = Pipeline("join")
    left = p.from_collection(f"left{x}", case["inputs"]["left"]).key_by(
        f"left_key{x}", lambda r: r[0]
    )
    right = p.from_collection(f"right{x}", case["inputs"]["right"]).key_by(
        f"right_key{x}", lambda r: r[0]
    )
    left.join(
        f"joined{x}",
        right,
        Tumbling(case["window"]),
        pair,
        timestamp=lambda r: r[1],
        how=case["how"],
        out_of_orderness=case["ooo"],
    ).to(f"sink{x}", partial(JsonSink, case["out"]))
    return p.build()
