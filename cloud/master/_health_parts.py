"""What the master's health loop (``_health_loop.py``) is built of: the decider's protocol, its
factory, and the policy read from a topology's config or a request (the state store on disk
is the health package's ``JsonFileStore``).

``make_decider`` is the one place that names the decider: the health manager of
``headwater.common.health``; the policy is read by that package's ``policy_from_config``
(a topology's ``headwater.health.*`` keys) and ``policy_from_json`` (an operator's request).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from headwater.common.health import (
    HealthManager,
    JsonFileStore,
    policy_from_config,
    policy_from_json,
)
from headwater.common.health._model import Action, HealthPolicy, RevisionOutcome, Sample
from headwater.common.health._policy import policy_to_json

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

    def settle(self, revisions: Sequence[RevisionOutcome]) -> None: ...

    def report(self) -> HealthReportLike: ...


def make_decider(topology: str, policy: HealthPolicy, store: JsonFileStore) -> HealthDecider:
    """The health manager of ``topology`` (its state in ``store``)."""
    return HealthManager(topology, policy, store)


__all__ = [
    "HEALTH_INTERVAL_S",
    "HealthDecider",
    "HealthReportLike",
    "make_decider",
    "policy_from_config",
    "policy_from_json",
    "policy_to_json",
]
