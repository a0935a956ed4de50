"""What the master's health loop (``_health_loop.py``) is built of: the decider's protocol, its
state store on disk, its factory, and the policy read from a topology's config or a request.

``make_decider`` is the one place that names the decider: the health manager of
``headwater.common.health`` (``HealthManager(topology, policy, store)``); until it is there, a
decider that diagnoses nothing and proposes nothing stands in, so that the loop, the REST
routes and the CLI work and show the policy. The policy readers likewise stand in for
``common/health/_policy.py``'s ``policy_from_config`` and ``policy_from_json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from headwater.common.health._model import Action, HealthPolicy, Mode, Sample

PREFIX = "headwater.health."
HEALTH_INTERVAL_S = 5.0
"""How often the master samples each topology for its health manager (``--health-interval``)."""


class HealthReportLike(Protocol):
    def to_json(self) -> dict[str, Any]: ...


class HealthDecider(Protocol):
    """What the loop asks of a topology's health manager (``common/health``)."""

    policy: HealthPolicy

    def set_policy(self, policy: HealthPolicy) -> None: ...

    def tick(self, sample: Sample) -> list[Action]: ...

    def applied(self, action: Action, revision: int | None, error: str | None) -> None: ...

    def report(self) -> HealthReportLike: ...


class JsonStateStore:
    """A decider's state in one JSON file (atomic: write, fsync, rename)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Any] | None:
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    def save(self, state: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)


@dataclass
class _Report:
    topology: str
    mode: Mode

    def to_json(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "mode": str(self.mode),
            "diagnoses": [],
            "proposed": [],
            "taken": [],
            "blacklisted": [],
        }


class _StandIn:
    """Diagnoses nothing, proposes nothing: until ``common/health``'s manager is there."""

    def __init__(self, topology: str, policy: HealthPolicy) -> None:
        self.topology = topology
        self.policy = policy

    def set_policy(self, policy: HealthPolicy) -> None:
        self.policy = policy

    def tick(self, sample: Sample) -> list[Action]:
        return []

    def applied(self, action: Action, revision: int | None, error: str | None) -> None:
        pass

    def report(self) -> HealthReportLike:
        return _Report(self.topology, self.policy.mode)


def make_decider(topology: str, policy: HealthPolicy, store: JsonStateStore) -> HealthDecider:
    """The health manager of ``topology`` (its state in ``store``)."""
    return _StandIn(topology, policy)


def policy_json(policy: HealthPolicy) -> dict[str, Any]:
    """A policy as the REST API shows it (the fields ``policy_from_json`` takes)."""
    out = asdict(policy)
    out["mode"] = str(policy.mode)
    out["per_component"] = {k: list(v) for k, v in policy.per_component.items()}
    return out


_FLOATS = ("target_utilization", "stabilization_s", "cooldown_s", "scale_down_cap", "blacklist_s")
_CONFIG = {
    "mode": "mode",
    "min_parallelism": "min_parallelism",
    "max_parallelism": "max_parallelism",
    "components": "per_component",
    **{k: k for k in _FLOATS},
}


def policy_from_config(config: Mapping[str, Any]) -> HealthPolicy:
    """The policy of a topology's config (``headwater.health.*``); ValueError for a bad value."""
    body = {
        _CONFIG[k[len(PREFIX) :]]: v
        for k, v in config.items()
        if isinstance(k, str) and k.startswith(PREFIX) and k[len(PREFIX) :] in _CONFIG
    }
    return policy_from_json(body, HealthPolicy()) if body else HealthPolicy()


def policy_from_json(body: Mapping[str, Any], base: HealthPolicy) -> HealthPolicy:
    """``base`` with the fields of ``body`` set; ValueError saying what to give for a bad one."""
    known = {f for f in policy_json(base)}
    unknown = sorted(set(body) - known)
    if unknown:
        raise ValueError(f"no policy field {', '.join(unknown)}: give {', '.join(sorted(known))}")
    out: dict[str, Any] = {}
    if "mode" in body:
        modes = ", ".join(m.value for m in Mode)
        if body["mode"] not in [m.value for m in Mode]:
            raise ValueError(f"mode {str(body['mode'])[:20]!r}: give one of {modes}")
        out["mode"] = Mode(body["mode"])
    for key in ("min_parallelism", "max_parallelism"):
        if key in body:
            out[key] = _whole(key, body[key])
    for key in _FLOATS:
        if key in body:
            value = body[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{key}: give a number of 0 or more")
            out[key] = float(value)
    if "per_component" in body:
        out["per_component"] = _per_component(body["per_component"])
    policy = replace(base, **out)
    _check(policy)
    return policy


def _whole(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
        raise ValueError(f"{key}: give a whole number from 1 to 10000")
    return value


def _per_component(value: Any) -> dict[str, tuple[int, int]]:
    if not isinstance(value, Mapping):
        raise ValueError("per_component: give {component: [min, max]}")
    out: dict[str, tuple[int, int]] = {}
    for name, bounds in value.items():
        if not isinstance(bounds, list | tuple) or len(bounds) != 2:
            raise ValueError(f"per_component {str(name)[:40]!r}: give [min, max]")
        out[str(name)] = (_whole("min", bounds[0]), _whole("max", bounds[1]))
    return out


def _check(policy: HealthPolicy) -> None:
    if policy.min_parallelism > policy.max_parallelism:
        raise ValueError(
            f"min_parallelism {policy.min_parallelism} is over max_parallelism "
            f"{policy.max_parallelism}: give a min no larger than the max"
        )
    for name, (low, high) in policy.per_component.items():
        if low > high:
            raise ValueError(f"component {name!r}: its min {low} is over its max {high}")
    if not 0 < policy.target_utilization <= 1:
        raise ValueError("target_utilization: give a fraction in (0, 1], e.g. 0.7")
    if not 0 < policy.scale_down_cap <= 1:
        raise ValueError("scale_down_cap: give a fraction in (0, 1], e.g. 0.5")
