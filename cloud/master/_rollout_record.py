"""A model rollout's record (``Rollout``), its phases, and where the records are kept.

Every rollout of the master is kept in ``rollouts.json`` of the master's state
(``save_records``), saved at each step, read back on start (``load_records``). It only ever
gains fields: a record an older master wrote (no waves, guards or stages) loads
with their defaults (one wave of 100%, no guard kept, no stage), and a field
this master does not know is dropped rather than refused, so a rollback across
versions keeps the history. A record that is not such records at all is kept
aside as ``rollouts.corrupt`` and the master starts with none.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any

from headwater.common._exceptions import HeadwaterError
from headwater.common.statemgr import Record, as_record

log = logging.getLogger("headwater.master.rollout")


class Phase(StrEnum):
    REQUESTED = "requested"
    CANARY = "canary"
    WAVE = "wave"
    WATCHING = "watching"
    PROMOTING = "promoting"
    DONE = "done"
    ROLLING_BACK = "rolling_back"
    ROLLED_BACK = "rolled_back"
    FAILED = "failed"


FINAL = (Phase.DONE, Phase.ROLLED_BACK, Phase.FAILED)


class RolloutError(HeadwaterError):
    """A rollout request that cannot be made (``status``: the HTTP status to answer)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Rollout:
    """One rollout (or rollback) and what became of it.

    ``waves``: the cumulative percentages after the canary; ``guards``: the guards it runs
    by, as text (``_rollout_guards.py``); ``must_grow``: a counter that must grow in each
    watch (a scoring step's ``scored``); ``stages``: per watched step (the canary, each
    wave), its agents, each guard's value and the verdict; ``figures``: the last watch's
    counters' growth (and the anomaly rate, for the JSON anomaly kind)."""

    id: int
    model: str
    version: int  # 0: a rollback (to ``target``)
    topology: str
    component: str
    canary: dict[str, str] | None = None
    watch_s: float = 30.0
    max_anomaly_rate: float = 0.2
    max_errors: int = 0
    kind: str = "rollout"  # or "rollback"
    phase: Phase = Phase.REQUESTED
    steps: list[dict[str, Any]] = field(default_factory=list)
    previous: dict[str, Any] | None = None  # the component's entry before (restored on failure)
    target: dict[str, Any] | None = None  # what a rollback restores
    edited: bool = False  # an edit was made (so a failure must restore ``previous``)
    figures: dict[str, float] = field(default_factory=dict)
    error: str = ""
    waves: list[float] = field(default_factory=lambda: [100.0])
    guards: list[str] = field(default_factory=list)
    must_grow: str = ""
    model_kind: str = ""
    stages: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.phase = Phase(self.phase)

    def view(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def load(cls, doc: dict[str, Any]) -> Rollout:
        """A record as ``view`` wrote it, by this master or an older or newer one."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in known})


def load_records(path: str | os.PathLike[str] | Record) -> list[Rollout]:
    """The records kept at ``path`` (a record of the state, or its file's path; [] when
    there are none, or they are not records)."""
    record = as_record(path)
    kept = record.read()
    if kept is None:
        return []
    try:
        docs = json.loads(kept)
        if not isinstance(docs, list):
            raise TypeError("not a list of records")
        return [Rollout.load(r) for r in docs]
    except (ValueError, TypeError, AttributeError, RecursionError) as exc:  # not ours
        aside = Record(record.state, str(PurePosixPath(record.path).with_suffix(".corrupt")))
        aside.write(kept)
        record.delete()
        log.error(
            "%s is not a rollout record (%s): kept as %s; starting with no rollouts",
            record.where,
            exc,
            aside.where,
        )
        return []


def save_records(path: str | os.PathLike[str] | Record, records: list[Rollout]) -> None:
    """Keep ``records`` at ``path`` (whole: a crash leaves the old records or the new)."""
    as_record(path).write(json.dumps([r.view() for r in records]).encode())
