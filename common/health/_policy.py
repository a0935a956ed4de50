"""A topology's health policy from its config (``headwater.health.*``) or a REST body.

Every bad value raises ``ValueError`` with a message that says what to give. The defaults
never act: the mode is off unless the topology or an operator says otherwise.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ._model import HealthPolicy, Mode

PREFIX = "headwater.health."

_INTS = ("min_parallelism", "max_parallelism")
_TIMES = ("stabilization_s", "cooldown_s", "blacklist_s")
_SHARES = ("target_utilization", "scale_down_cap")
MAX_TASKS = 10_000  # a bound an operator's typo cannot pass (a rescale to it would start them)
KEYS = ("mode", *_INTS, *_SHARES, *_TIMES, "components")


def _mode(value: Any) -> Mode:
    try:
        return Mode(str(value).lower())
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        raise ValueError(f"health mode {value!r}: give one of {choices}") from None


def _int(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"health {key} {value!r}: give a whole number of tasks, 1 to {MAX_TASKS}")
    try:
        n = int(value)
    except ValueError:
        raise ValueError(
            f"health {key} {value!r}: give a whole number of tasks, 1 to {MAX_TASKS}"
        ) from None
    if not 1 <= n <= MAX_TASKS:
        raise ValueError(f"health {key} {n}: give a whole number of tasks, 1 to {MAX_TASKS}")
    return n


def _number(key: str, value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"health {key} {value!r}: give {what}")
    try:
        x = float(value)
    except ValueError:
        raise ValueError(f"health {key} {value!r}: give {what}") from None
    if not math.isfinite(x):
        raise ValueError(f"health {key} {value!r}: give {what}")
    return x


def _share(key: str, value: Any) -> float:
    x = _number(key, value, "a share in (0, 1], such as 0.7")
    if not 0 < x <= 1:
        raise ValueError(f"health {key} {x}: give a share in (0, 1], such as 0.7")
    return x


def _time(key: str, value: Any) -> float:
    x = _number(key, value, "a number of seconds, 0 or more")
    if x < 0:
        raise ValueError(f"health {key} {x}: give a number of seconds, 0 or more")
    return x


def _components(value: Any) -> dict[str, tuple[int, int]]:
    hint = 'give {"component": [min, max], ...} with 1 <= min <= max'
    if not isinstance(value, Mapping):
        raise ValueError(f"health components {value!r}: {hint}")
    out: dict[str, tuple[int, int]] = {}
    for name, bounds in value.items():
        if not isinstance(bounds, list | tuple) or len(bounds) != 2:
            raise ValueError(f"health components[{name!r}] {bounds!r}: {hint}")
        lo, hi = (
            _int(f"components[{name!r}] min", bounds[0]),
            _int(f"components[{name!r}] max", bounds[1]),
        )
        if lo > hi:
            raise ValueError(f"health components[{name!r}] min {lo} > max {hi}: {hint}")
        out[str(name)] = (lo, hi)
    return out


def _apply(base: HealthPolicy, values: Mapping[str, Any]) -> HealthPolicy:
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise ValueError(f"health setting {unknown[0]!r} is unknown: give one of {', '.join(KEYS)}")
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if key == "mode":
            changes[key] = _mode(value)
        elif key in _INTS:
            changes[key] = _int(key, value)
        elif key in _SHARES:
            changes[key] = _share(key, value)
        elif key in _TIMES:
            changes[key] = _time(key, value)
        else:
            changes["per_component"] = _components(value)
    policy = dataclasses.replace(base, **changes)
    if policy.min_parallelism > policy.max_parallelism:
        raise ValueError(
            f"health min_parallelism {policy.min_parallelism} > max_parallelism "
            f"{policy.max_parallelism}: give a min no larger than the max"
        )
    return policy


def policy_from_config(config: Mapping[str, Any], base: HealthPolicy | None = None) -> HealthPolicy:
    """The policy a topology's config gives (its ``headwater.health.*`` keys; others ignored)."""
    values = {k[len(PREFIX) :]: v for k, v in config.items() if k.startswith(PREFIX)}
    return _apply(base if base is not None else HealthPolicy(), values)


def policy_from_json(body: Mapping[str, Any], base: HealthPolicy) -> HealthPolicy:
    """``base`` with what an operator's body changes (keys without the prefix, or with it)."""
    values = {(k[len(PREFIX) :] if k.startswith(PREFIX) else k): v for k, v in body.items()}
    return _apply(base, values)


def policy_to_json(policy: HealthPolicy) -> dict[str, Any]:
    """The policy as ``policy_from_json`` reads it back."""
    out: dict[str, Any] = {k: getattr(policy, k) for k in KEYS if k != "components"}
    out["mode"] = policy.mode.value
    out["components"] = {n: list(b) for n, b in sorted(policy.per_component.items())}
    return out
