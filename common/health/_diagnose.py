"""Detectors and diagnoses (Dhalion's first two steps), and what resolves each diagnosis.

Symptoms are read from one interval's rates: a component is *loaded* when its tasks are
busy nearly all the time or one of them has its output blocked. A component with a silent
task (no report in the interval: in a long frame, stopped or hung; ``_rates.py``) is not
diagnosed in that interval: read as idle, that task made a component held back by it look
over-provisioned, and its siblings skewed. The diagnoses, the first that fits a component
winning, in this order:

- ``slow-instance``: under a balanced input (shuffle, none, all), one loaded task's true
  processing rate is below ``SLOW_RATIO`` times its siblings' median: the task, not the
  component, is at fault. Resolved by restarting that task; no rescale.
- ``skew``: under a fields grouping, one task's arrival rate is above ``SKEW_RATIO`` times
  its siblings' median. Its evidence: the task's share of the component's arrivals
  (``load_share``), its busy share and its siblings' median one, and its hot keys, each with
  its share of the task's sampled input (``share``) and of the component's load
  (``load_share``: that share times the task's). Only reported: more tasks would not split a
  hot key.
- ``edge-overload``: a component on the agents is loaded while their ingest backlog grows
  (at least ``MIN_ARRIVAL`` records/s; where no agent reports a backlog, loaded is enough)
  and their uplinks are up. Reported with the rates and the backlog, and rescaled to its DS2
  target within its bounds and its agents' room (``ComponentInfo.cap``) when that is above
  its parallelism. A loaded edge component whose backlog does not grow keeps up (it may be
  catching up after a rescale): no diagnosis. Nor while an uplink is down: the outbox then
  fills and holds the subgraph back, which more tasks would not mend.
- ``under-provisioned``: loaded, with a DS2 target above its parallelism: rescaled to it.
- ``over-provisioned``: busy below ``LOW_BUSY`` times the target utilization, with a DS2
  target below its parallelism: rescaled down, once it lasted the stabilization window
  (the guards see to that).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from ._model import Action, ComponentInfo, Diagnosis, IngestBacklog
from ._rates import ComponentRates, TaskRates

BUSY_HIGH = 0.9  # a busy share "near 1"
BACKPRESSURE_HIGH = 0.05  # a share of the interval holding its sources back that counts
LOW_BUSY = 0.6  # over-provisioned below this share of the target utilization
SLOW_RATIO = 0.5  # a slow task's true rate is below this share of its siblings' median
SKEW_RATIO = 2.0  # a hot task's arrival rate is above this many times its siblings' median
MIN_ARRIVAL = 1.0  # records per second under which arrival rates are not compared

UNDER = "under-provisioned"
OVER = "over-provisioned"
SLOW = "slow-instance"
SKEW = "skew"
EDGE = "edge-overload"

_BALANCED = frozenset({"shuffle", "none", "all"})


def _loaded(t: TaskRates | ComponentRates) -> bool:
    return t.busy >= BUSY_HIGH or t.backpressure >= BACKPRESSURE_HIGH


def _figures(r: ComponentRates, parallelism: int, target: int) -> dict[str, float | int]:
    true = r.true_processing
    return {
        "parallelism": parallelism,
        "target": target,
        "busy": round(r.busy, 3),
        "backpressure": round(r.backpressure, 3),
        "arrival": round(r.arrival, 3),
        "processed": round(r.processed, 3),
        "true_processing": round(true, 3) if true is not None else -1,
    }


def _slow(info: ComponentInfo, r: ComponentRates) -> Diagnosis | None:
    if not info.inputs or any(kind not in _BALANCED for _, kind in info.inputs):
        return None
    measured = [(t, t.true_processing) for t in r.tasks if t.true_processing is not None]
    if len(measured) < 2:
        return None
    for t, true in measured:
        others = [v for u, v in measured if u.task != t.task and v is not None]
        median = statistics.median(others)
        if true is not None and _loaded(t) and true < SLOW_RATIO * median:
            return Diagnosis(
                SLOW,
                info.name,
                f"task {t.task} processes {true:.1f} records per busy second, its "
                f"siblings' median {median:.1f}: the task is slow, not the component",
                {"task_true_processing": round(true, 3), "siblings_median": round(median, 3)},
                (t.task,),
            )
    return None


def _skew(info: ComponentInfo, r: ComponentRates) -> Diagnosis | None:
    if not any(kind == "fields" for _, kind in info.inputs) or len(r.tasks) < 2:
        return None
    for t in r.tasks:
        siblings = [u for u in r.tasks if u.task != t.task]
        median = statistics.median(u.arrival for u in siblings)
        if t.arrival >= MIN_ARRIVAL and t.arrival > SKEW_RATIO * max(median, 1e-9):
            load = t.arrival / r.arrival  # the hot task's share of the component's arrivals
            keys = [
                {"key": k, "share": round(s, 3), "load_share": round(s * load, 3)}
                for k, s in t.hot_keys
            ]
            return Diagnosis(
                SKEW,
                info.name,
                f"task {t.task} receives {t.arrival:.1f} records/s ({load:.0%} of the "
                f"component's), its siblings' median {median:.1f}: hot keys under a fields "
                "grouping; more tasks would not help",
                {
                    "arrival": round(t.arrival, 3),
                    "siblings_median": round(median, 3),
                    "load_share": round(load, 3),
                    "busy": round(t.busy, 3),
                    "siblings_busy": round(statistics.median(u.busy for u in siblings), 3),
                    "hot_keys": keys,
                },
                (t.task,),
            )
    return None


def _edge(
    info: ComponentInfo,
    r: ComponentRates,
    figures: dict[str, float | int],
    utilization: float,
    ingest: IngestBacklog | None,
) -> Diagnosis | None:
    if ingest is not None and ingest.growth < MIN_ARRIVAL:
        return None  # it keeps up with its ingest (or catches up)
    target = int(figures["target"])
    room = ""
    if info.cap is not None:
        figures["cap"] = info.cap
        room = f" (its agents have room for {info.cap})" if info.cap < target else ""
    behind = f"busy {r.busy:.0%}, output blocked {r.backpressure:.0%}"
    if ingest is not None:
        figures["backlog"] = round(ingest.records)
        figures["backlog_growth"] = round(ingest.growth, 3)
        ingested = ""
        if ingest.rate is not None:
            figures["ingest_rate"] = round(ingest.rate, 3)
            ingested = f"its agents ingest {ingest.rate:.1f} records/s, "
        behind = (
            f"the ingest backlog grows {ingest.growth:.1f} records/s ({ingest.records:.0f} "
            f"behind): {ingested}it processes {r.processed:.1f} records/s, {behind}"
        )
    return Diagnosis(
        EDGE,
        info.name,
        f"edge component {info.name} does not keep up with its ingest: {behind}; "
        f"{target} tasks keep up at {utilization:.0%} utilization{room}",
        figures,
    )


def _provisioning(
    info: ComponentInfo,
    r: ComponentRates,
    target: int,
    utilization: float,
    ingest: IngestBacklog | None = None,
) -> Diagnosis | None:
    figures = _figures(r, info.parallelism, target)
    if _loaded(r) and info.edge:
        return _edge(info, r, figures, utilization, ingest)
    if _loaded(r) and target > info.parallelism:
        return Diagnosis(
            UNDER,
            info.name,
            f"busy {r.busy:.0%}, output blocked {r.backpressure:.0%}: "
            f"{target} tasks keep up at {utilization:.0%} utilization",
            figures,
        )
    if (
        r.busy < LOW_BUSY * utilization
        and target < info.parallelism
        and r.backpressure < BACKPRESSURE_HIGH
    ):
        return Diagnosis(
            OVER,
            info.name,
            f"busy {r.busy:.0%}: {target} tasks are enough at {utilization:.0%} utilization",
            figures,
        )
    return None


def diagnose(
    components: Mapping[str, ComponentInfo],
    rates: Mapping[str, ComponentRates],
    targets: Mapping[str, int],
    utilization: float,
    ingest: IngestBacklog | None = None,
    uplinks_up: bool = True,
) -> list[Diagnosis]:
    """The diagnoses of one interval, at most one per component, in component name order
    (``ingest``: the edge subgraphs' backlog; ``uplinks_up``: no edge diagnosis if not)."""
    found: list[Diagnosis] = []
    for name in sorted(components):
        info, r = components[name], rates.get(name)
        if r is None or info.source or not r.complete:
            continue  # a silent task may be the busiest: its component is not judged now
        if info.edge and not uplinks_up:
            continue
        target = targets.get(name, info.parallelism)
        d = _slow(info, r) or _skew(info, r)
        d = d or _provisioning(info, r, target, utilization, ingest)
        if d is not None:
            found.append(d)
    return found


def resolve(d: Diagnosis) -> list[Action]:
    """What would resolve a diagnosis, before the guards (bounds, cooldown...) have a say."""
    if d.kind == SLOW:
        return [Action("restart", d.component, d.reason, tasks=d.tasks, diagnosis=d)]
    if d.kind == SKEW:
        return [Action("report", d.component, d.reason, diagnosis=d)]
    target = int(d.evidence.get("target", 0))
    rescale = Action("rescale", d.component, d.reason, parallelism=target, diagnosis=d)
    if d.kind == EDGE:
        grow = target > int(d.evidence.get("parallelism", target))
        return [Action("report", d.component, d.reason, diagnosis=d), *([rescale] if grow else [])]
    return [rescale]
