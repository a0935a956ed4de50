"""Self-regulation: a health manager per topology (detect, diagnose, resolve).

After Heron's Dhalion (symptoms from metrics, diagnoses of their cause, resolutions that
are black-listed when they did not help) with DS2's rate-based parallelism (each
component's true processing rate, records per second of busy time, gives the parallelism
that keeps up in one step). Pure decisions over samples of the topology's metrics, on an
injected clock: the master's loop feeds it samples and applies what it decides as live
edits (``cloud/master``). The shared vocabulary is in ``_model.py``.
"""

from ._manager import HealthManager
from ._model import (
    Action,
    ComponentInfo,
    Diagnosis,
    HealthPolicy,
    Mode,
    RevisionOutcome,
    Sample,
    TaskSample,
)
from ._policy import policy_from_config, policy_from_json, policy_to_json
from ._records import Blacklisted, HealthReport, JsonFileStore, StateStore, TakenAction

__all__ = [
    "Action",
    "Blacklisted",
    "ComponentInfo",
    "Diagnosis",
    "HealthManager",
    "HealthPolicy",
    "HealthReport",
    "JsonFileStore",
    "Mode",
    "RevisionOutcome",
    "Sample",
    "StateStore",
    "TakenAction",
    "TaskSample",
    "policy_from_config",
    "policy_from_json",
    "policy_to_json",
]
