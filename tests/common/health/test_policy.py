from __future__ import annotations

from typing import Any

import pytest

from headwater.common.health import (
    HealthPolicy,
    Mode,
    policy_from_config,
    policy_from_json,
    policy_to_json,
)


def test_defaults_never_act() -> None:
    assert policy_from_config({}) == HealthPolicy() and HealthPolicy().mode is Mode.OFF


def test_config_keys() -> None:
    p = policy_from_config(
        {
            "headwater.health.mode": "AUTO",
            "headwater.health.min_parallelism": 2,
            "headwater.health.max_parallelism": "12",
            "headwater.health.target_utilization": 0.6,
            "headwater.health.stabilization_s": 300,
            "headwater.health.cooldown_s": 30.5,
            "headwater.health.scale_down_cap": 1,
            "headwater.health.blacklist_s": 0,
            "headwater.health.components": {"count": [1, 4]},
            "topology.workers": 3,
        }
    )
    assert p.mode is Mode.AUTO and (p.min_parallelism, p.max_parallelism) == (2, 12)
    assert (
        p.target_utilization,
        p.stabilization_s,
        p.cooldown_s,
        p.scale_down_cap,
        p.blacklist_s,
    ) == (
        0.6,
        300.0,
        30.5,
        1.0,
        0.0,
    )
    assert p.bounds("count") == (1, 4) and p.bounds("split") == (2, 12)
    assert policy_from_json(policy_to_json(p), HealthPolicy()) == p


def test_json_changes_a_base() -> None:
    base = policy_from_config(
        {"headwater.health.mode": "recommend", "headwater.health.cooldown_s": 5}
    )
    p = policy_from_json({"mode": "auto"}, base)
    assert p.mode is Mode.AUTO and p.cooldown_s == 5.0


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"mode": "sometimes"}, "give one of off, recommend, auto"),
        ({"min_parallelism": 4, "max_parallelism": 2}, "give a min no larger than the max"),
        ({"min_parallelism": 0}, "1 to 10000"),
        ({"max_parallelism": "many"}, "whole number"),
        ({"max_parallelism": True}, "whole number"),
        ({"target_utilization": 0}, "share in (0, 1]"),
        ({"target_utilization": 1.5}, "share in (0, 1]"),
        ({"scale_down_cap": "half"}, "share in (0, 1]"),
        ({"cooldown_s": -1}, "seconds, 0 or more"),
        ({"stabilization_s": float("nan")}, "seconds, 0 or more"),
        ({"components": {"count": [3, 1]}}, "1 <= min <= max"),
        ({"components": {"count": 3}}, "1 <= min <= max"),
        ({"components": [1, 2]}, "1 <= min <= max"),
        ({"speed": "fast"}, "unknown: give one of mode"),
    ],
)
def test_bad_values_say_what_to_give(body: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match="health") as e:
        policy_from_json(body, HealthPolicy())
    assert says in str(e.value)
    with pytest.raises(ValueError):
        policy_from_config({f"headwater.health.{k}": v for k, v in body.items()})
