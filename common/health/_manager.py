"""The health manager of one topology: samples in, actions out, its state in a store.

Each ``tick`` takes a sample of the topology's metrics, derives the rates since the
previous one, DS2's target parallelism per component and the diagnoses, and lets the
guards decide which of the actions resolving them may go now. In ``AUTO`` those are
returned, and recorded as pending in the store *before* ``tick`` returns them: a manager
restarted between returning an action and hearing what became of it counts it as taken (its
cooldown holds), so it never repeats it. In ``RECOMMEND`` they are only proposed, in
``report()``.

A pending action is settled by what became of it: ``applied`` says the revision its edit
made (or why it failed; a restart or a report is done once sent), and ``settle`` follows
each revision to its outcome in the topology's history (applied, rolled back, refused). A
pending action whose revision was never heard of (the master stopped between recording it
and hearing back) is found in that history by its reason; one that is not there was never
applied: it fails, and nothing is pending for ever. An action that failed or was rolled
back is not judged (not black-listed), and its cooldown holds.

Each action taken records its component's rates over the window it was decided on
(``before``) and, once it is applied, over the first whole window that begins after the
first sample taken since (``after``: a rescale's new tasks, a restarted task, are measured
from their start, never across it). A manager restarted meanwhile measures the ``after``
of an action it finds pending, not of one it finds settled (too late to tell).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence

from ._diagnose import diagnose, resolve
from ._ds2 import targets
from ._guards import Guards
from ._model import Action, Diagnosis, HealthPolicy, IngestBacklog, Mode, RevisionOutcome, Sample
from ._rates import ComponentRates, rates
from ._records import (
    PENDING,
    Blacklisted,
    Figures,
    HealthReport,
    StateStore,
    TakenAction,
    rate_figures,
)

HISTORY = 50  # the taken actions a report keeps
RATE_WINDOW_S = 5.0
"""Rates are taken over at least this long (less a tenth, for a tick's jitter). A task
reports its counters every second and its stream manager forwards them every second, the
two unsynchronised: read a second apart, a counter moved by 0, 1 or 2 seconds' worth, which
showed a balanced task as idle or twice as loaded (a false skew, a wrong target). Over
5 s that error is a fifth at most; a loop that samples less often uses its previous sample."""

MATCH_S = 60.0
"""A revision found for a pending action by its reason was made at most this long before the
action was recorded (a wall clock stepped back meanwhile), and after it otherwise."""
NEVER_APPLIED = "failed: never applied (the master stopped before it made the edit)"

log = logging.getLogger("headwater.health")


def ingest_backlog(before: Sample, after: Sample) -> IngestBacklog | None:
    """The edge subgraphs' ingest backlog between two samples (None: not reported in both)."""
    if before.ingest_backlog is None or after.ingest_backlog is None:
        return None
    then = before.backlog_at if before.backlog_at is not None else before.at
    now = after.backlog_at if after.backlog_at is not None else after.at
    if now <= then:
        return None
    growth = (after.ingest_backlog - before.ingest_backlog) / (now - then)
    rate = None
    b, a = before.ingest_end, after.ingest_end
    if b is not None and a is not None and a >= b:  # ends never go back: else a log replaced
        rate = (a - b) / (now - then)
    return IngestBacklog(after.ingest_backlog, growth, rate)


def edge_demands(
    sample: Sample, measured: dict[str, ComponentRates], ingest: IngestBacklog | None
) -> dict[str, float]:
    """The demand on each edge source, where the ingest backlog is known: its share of the
    rate the agents ingest at, else what it emitted plus its share of the backlog's growth."""
    sources = [c.name for c in sample.components.values() if c.edge and c.source]
    if ingest is None or not sources:
        return {}
    if ingest.rate is not None:
        return {n: ingest.rate / len(sources) for n in sources}
    more = max(ingest.growth, 0.0) / len(sources)
    return {n: (measured[n].emitted if n in measured else 0.0) + more for n in sources}


class HealthManager:
    """Detect, diagnose, resolve, for one topology, under its policy."""

    def __init__(
        self,
        topology: str,
        policy: HealthPolicy,
        store: StateStore,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.topology = topology
        self.policy = policy
        self._store = store
        self._clock = clock
        self._wall = wall
        self._samples: list[Sample] = []  # the recent samples, oldest first
        self._diagnoses: list[Diagnosis] = []
        self._proposed: list[Action] = []
        self._taken: list[TakenAction] = []
        self._rates: dict[str, Figures] = {}  # each component's, over the last tick's window
        self._guards = Guards()
        self._load()

    def set_policy(self, policy: HealthPolicy) -> None:
        self.policy = policy
        if policy.mode is not Mode.RECOMMEND:
            self._proposed = []
        if policy.mode is Mode.OFF:
            self._diagnoses = []

    def tick(self, sample: Sample) -> list[Action]:
        """The actions to apply now (empty unless the mode is AUTO)."""
        if sample.topology != self.topology:
            return []
        previous = self._base(sample)
        self._mark_applied(sample)
        if self.policy.mode is Mode.OFF or previous is None:
            return []
        now = self._clock()
        measured = rates(previous, sample)
        figures = {n: f for n, r in measured.items() if (f := rate_figures(r)) is not None}
        self._rates = figures
        self._measure_after(previous, figures)
        ingest = ingest_backlog(previous, sample)
        utilization = self.policy.target_utilization
        wanted = targets(
            sample.components, measured, utilization, edge_demands(sample, measured, ingest)
        )
        self._diagnoses = diagnose(
            sample.components, measured, wanted, utilization, ingest, sample.uplinks_up
        )
        self._guards.observe(self._diagnoses, now, self.policy)
        actions: list[Action] = []
        for d in self._diagnoses:
            info = sample.components[d.component]
            for a in resolve(d):
                admitted = self._guards.admit(a, info.parallelism, self.policy, now, info.cap)
                if admitted is not None:
                    actions.append(admitted)
        if self.policy.mode is Mode.RECOMMEND:
            self._proposed = actions
            self._save()
            return []
        self._proposed = []
        for a in actions:
            self._guards.record(a, sample.components[a.component].parallelism, now)
            before = figures.get(a.component)
            self._taken.append(TakenAction(a, self._wall(), before=before, watched=True))
        self._taken = self._taken[-HISTORY:]
        self._save()  # pending before returned: a restart never repeats them
        return actions

    def _mark_applied(self, sample: Sample) -> None:
        """An action applied since the previous tick has its ``after`` window begin at
        ``sample``; one that failed or was rolled back has none."""
        for i, t in enumerate(self._taken):
            if t.watched and t.outcome not in (PENDING, "applied"):
                self._taken[i] = dataclasses.replace(t, watched=False)
            elif t.watched and t.outcome == "applied" and t.after_from is None:
                self._taken[i] = dataclasses.replace(t, after_from=sample.at)

    def _measure_after(self, previous: Sample, figures: dict[str, Figures]) -> None:
        """The ``after`` of each applied action whose window began at or before ``previous``."""
        changed = False
        for i, t in enumerate(self._taken):
            if t.after_from is None or not t.watched or previous.at < t.after_from:
                continue
            after = figures.get(t.action.component)
            if after is not None:
                self._taken[i] = dataclasses.replace(t, after=after, watched=False)
                changed = True
        if changed:
            self._save()

    def _base(self, sample: Sample) -> Sample | None:
        """The newest sample of the same revision at least ``RATE_WINDOW_S`` before ``sample``
        (None if none is: rates never span an edit, whose new tasks start at different
        times); keeps it, those after it and ``sample``."""
        earlier = [s for s in self._samples if s.at < sample.at and s.revision == sample.revision]
        old = [s for s in earlier if sample.at - s.at >= RATE_WINDOW_S * 0.9]
        base = old[-1] if old else None
        self._samples = [*(s for s in earlier if base is None or s.at >= base.at), sample]
        return base

    def applied(self, action: Action, revision: int | None, error: str | None) -> None:
        """What became of an action ``tick`` returned: the revision its edit made (still
        pending: ``settle`` follows it to its outcome), or why it failed; one with neither (a
        restart, a report) is done."""
        for i in range(len(self._taken) - 1, -1, -1):
            t = self._taken[i]
            if t.action == action and t.outcome == PENDING and t.revision is None:
                outcome = PENDING if revision is not None else "applied"
                outcome = outcome if error is None else f"failed: {error}"
                self._taken[i] = dataclasses.replace(t, revision=revision, outcome=outcome)
                break
        if error is not None:
            self._guards.failed(action)
        self._save()

    def settle(self, revisions: Sequence[RevisionOutcome]) -> None:
        """Each pending action's outcome, from the revisions its edits made (``revisions``:
        the topology's history of them, as it is now). Call it when no action ``tick``
        returned is still being applied (before a tick, or on a start): a pending action
        with no revision is then one the master stopped on; it is found among ``revisions``
        by its reason, or was never applied."""
        numbers = {r.revision: r for r in revisions}
        claimed = {t.revision for t in self._taken if t.revision is not None}
        changed = False
        for i, t in enumerate(self._taken):
            if t.outcome != PENDING:
                continue
            revision = t.revision
            if revision is None and t.action.kind == "rescale":
                found = next(
                    (
                        r
                        for r in revisions
                        if r.revision not in claimed
                        and r.reason == t.action.reason
                        and r.at >= t.at - MATCH_S
                    ),
                    None,
                )
                if found is not None:
                    revision = found.revision
                    claimed.add(revision)
            outcome = _outcome(revision, numbers)
            if (revision, outcome) == (t.revision, t.outcome):
                continue
            self._taken[i] = dataclasses.replace(t, revision=revision, outcome=outcome)
            changed = True
            if outcome not in (PENDING, "applied"):  # not judged; its cooldown holds
                self._guards.failed(t.action)
        if changed:
            self._save()

    def report(self) -> HealthReport:
        now, wall = self._clock(), self._wall()
        bans = [
            Blacklisted(b.kind, b.component, wall + (b.until - now), b.why)
            for b in self._guards.bans(now)
        ]
        return HealthReport(
            self.topology,
            self.policy.mode,
            list(self._diagnoses),
            list(self._proposed),
            list(self._taken),
            bans,
            dict(self._rates) if self.policy.mode is not Mode.OFF else {},
        )

    def _save(self) -> None:
        self._store.save(
            {
                "version": 1,
                "topology": self.topology,
                "guards": self._guards.to_json(),
                "taken": [t.to_json() for t in self._taken],
            }
        )

    def _load(self) -> None:
        state = self._store.load()
        if not state or state.get("topology") != self.topology:
            return
        self._guards = Guards.from_json(state.get("guards", {}), self._clock())
        self._taken = [TakenAction.from_json(t) for t in state.get("taken", [])]


def _outcome(revision: int | None, revisions: dict[int, RevisionOutcome]) -> str:
    """A pending action's outcome, from its revision's status in ``revisions``."""
    if revision is None:
        return NEVER_APPLIED
    r = revisions.get(revision)
    if r is None:
        return f"failed: revision {revision} is not in the topology's history"
    if r.status == "applying":
        return PENDING
    if r.status == "applied":
        return "applied"
    if r.status == "rolled_back":
        return f"rolled back: {r.error or 'the previous revision runs'}"
    return f"failed: {r.error or r.status}"
