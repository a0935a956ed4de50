"""User counters are bounded per task: a counter per device cannot grow every report."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from headwater.common.runtime._context import (
    MAX_COUNTER_NAME,
    MAX_USER_COUNTERS,
    OTHER_COUNTER,
    InstanceContext,
)


def test_names_past_the_bound_count_under_other() -> None:
    inst: Any = SimpleNamespace(counts=SimpleNamespace(user_counters={}))
    ctx = InstanceContext(inst)
    for n in range(MAX_USER_COUNTERS + 50):
        ctx.incr(f"device-{n}")
    ctx.incr("device-0", 2)  # a name it keeps still counts as itself
    ctx.incr("x" * 500)
    counters = inst.counts.user_counters
    assert len(counters) == MAX_USER_COUNTERS + 1
    assert counters["device-0"] == 3
    assert counters[OTHER_COUNTER] == 50 + 1
    assert f"device-{MAX_USER_COUNTERS}" not in counters


def test_a_long_name_is_cut() -> None:
    inst: Any = SimpleNamespace(counts=SimpleNamespace(user_counters={}))
    InstanceContext(inst).incr("y" * 500, 4)
    assert inst.counts.user_counters == {"y" * MAX_COUNTER_NAME: 4}
