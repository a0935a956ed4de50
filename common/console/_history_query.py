"""The history read back: series of rates and gauges over a window, and the rates the page shows.

``series_view`` answers ``GET /api/v1/topologies/NAME/history``: per component (and per
task if asked) a list of points, each the counters' growth over the time since the point
before it divided by that time (rates per second, differentiated here from the
increments ``_history.py`` keeps, so a restarted task's counter never makes a negative
or a huge rate) and the gauges as the point's last sample reported them; at most
``MAX_POINTS`` points however long the window (fewer when the answer holds so many
series that it would pass ``POINT_BUDGET`` points: a whole topology with its tasks is an
overview, and its cost stays bounded), and ``mean``: the rates over the whole
window (the counters' growth from its first sample to its last, over that time).

``rates_view`` gives the page's rates (the DAG, the topologies table): each component's
over the last ``RATE_WINDOW_S`` seconds of its samples, the same arithmetic as a chart's
``mean``, so that the two agree.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate, pairwise
from typing import Any

from ._history import COUNTERS, FIELDS, GAUGES, History, Series

MAX_POINTS = 150
"""The most points a series answers: a 15-minute window at one point per 6 s."""
POINT_BUDGET = 20_000
"""The most points an answer holds, all series together (each keeps at least 20)."""
RATE_WINDOW_S = 10.0
"""The window of the rates the page shows beside the charts (DAG, topologies table)."""
_N = len(COUNTERS)


def _round(v: float) -> float:
    return round(v, 3)


def series(s: Series, t0: float, step: float, offset: float, tick: float) -> dict[str, Any]:
    """``s``'s samples from ``t0`` as points at least about ``step`` seconds apart (times as
    epoch seconds: the monotonic time plus ``offset``), and the window's ``mean`` rates.
    A point's rates are the increments since the point before over the time between; the
    window's first sample only opens the first point (its increments are from before)."""
    times, columns = s.ordered()
    first = bisect_left(times, t0)
    out: dict[str, Any] = {"t": [], **{f: [] for f in FIELDS}, "mean": None, "span_s": 0.0}
    if first >= len(times):
        return out
    bounds = [first]
    least = step - tick / 2  # reports' jitter: a point spans about a step
    while True:  # the next sample at least ``least`` after the point before (bisected)
        j = bisect_left(times, times[bounds[-1]] + least, bounds[-1] + 1)
        if j >= len(times):
            break
        bounds.append(j)
    sums = [list(accumulate(columns[k][first:], initial=0.0)) for k in range(_N)]
    spans = [(a - first + 1, b - first + 1, b, times[b] - times[a]) for a, b in pairwise(bounds)]
    out["t"] = [round(times[b] + offset, 3) for _, _, b, _ in spans]
    for k, f in enumerate(COUNTERS):  # column by column: a list comprehension each
        c = sums[k]
        out[f] = [round((c[j] - c[i]) / dt, 3) for i, j, _, dt in spans]
    for k, f in enumerate(GAUGES):
        g = columns[_N + k]
        out[f] = [round(g[b], 3) for _, _, b, _ in spans]
    span = times[-1] - times[first]
    if span > 0:
        out["mean"] = {f: _round((sums[k][-1] - sums[k][1]) / span) for k, f in enumerate(COUNTERS)}
        out["span_s"] = round(span, 3)
    return out


def window_rates(s: Series, t0: float) -> tuple[float, ...] | None:
    """The rates of ``COUNTERS`` from ``s``'s first sample at or after ``t0`` to its last;
    None with fewer than two samples there."""
    samples = s.newest(t0)
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return None
    span = samples[-1][0] - samples[0][0]
    return tuple(sum(v[k] for _, v in samples[1:]) / span for k in range(_N))


def series_view(
    history: History, name: str, window: float, component: str | None, tasks: bool
) -> dict[str, Any] | None:
    """The history of topology ``name`` over the last ``window`` seconds (None if it has
    none): every component's series, or only ``component``'s; with ``tasks``, the cloud
    tasks' too (of ``component`` alone if given)."""
    h = history.of.get(name)
    if h is None:
        return None
    now = history.clock.monotonic()
    offset = history.clock.time() - now
    t0 = now - window
    wanted = [c for c in h.components if component is None or c == component]
    of = _task_components(history, name) if tasks else {}
    count = len(wanted) + sum(
        1 for t in h.tasks if tasks and (component is None or of.get(t) == component)
    )
    points = max(20, min(MAX_POINTS, POINT_BUDGET // max(1, count)))
    step = max(history.tick_s, window / points)
    components = {
        c: {
            "side": "edge" if c in h.edge else "cloud",
            "sources": s.sources,
            **series(s, t0, step, offset, history.tick_s),
        }
        for c, s in sorted(h.components.items())
        if component is None or c == component
    }
    out: dict[str, Any] = {
        "topology": name,
        "time": round(now + offset, 3),
        "window_s": window,
        "step_s": step,
        "tick_s": history.tick_s,
        "history_s": history.window_s,
        "units": _UNITS,
        "components": components,
    }
    if tasks:
        out["tasks"] = {
            t: {"component": of.get(t, ""), **series(s, t0, step, offset, history.tick_s)}
            for t, s in sorted(h.tasks.items(), key=lambda kv: int(kv[0]))
            if component is None or of.get(t) == component
        }
    return out


_UNITS = {
    "executed": "tuples/s",
    "emitted": "tuples/s",
    "backpressure_ms": "ms/s (summed over tasks)",
    "dead_letters": "records/s",
    "exceptions": "exceptions/s",
    "latency_us": "µs (the slowest task's)",
    "pending": "tuples queued",
}


def _task_components(history: History, name: str) -> dict[str, str]:
    h = history.of.get(name)
    tm = None if h is None else h.tm
    if tm is None:
        return {}
    return {str(i.task_id): i.component for i in tm.plan.instances}


def known_components(history: History, name: str) -> list[str]:
    """The components a history request may name: those of the plan, and those sampled."""
    tm = history.topologies().get(name)
    h = history.of.get(name)
    planned = set() if tm is None else {i.component for i in tm.plan.instances}
    return sorted(planned | set(() if h is None else h.components))


def rates_view(history: History, names: Iterable[str], detail: str | None) -> dict[str, Any]:
    """The page's rates over the last ``RATE_WINDOW_S``: each topology's (its cloud
    components' executed, summed: what the topologies table shows) and, for ``detail``,
    each component's {in, out, bp} (bp: the share of time its tasks spent blocked)."""
    t0 = history.clock.monotonic() - RATE_WINDOW_S
    out: dict[str, Any] = {"window_s": RATE_WINDOW_S, "topologies": {}, "components": {}}
    for name in names:
        h = history.of.get(name)
        if h is None:
            continue
        total = None
        for c, s in h.components.items():
            r = window_rates(s, t0)
            if r is None:
                continue
            if c not in h.edge:
                total = (total or 0.0) + r[0]
            if name == detail:
                out["components"][c] = {
                    "in": _round(r[0]),
                    "out": _round(r[1]),
                    "bp": _round(r[2] / 1000 / max(1, s.sources)),
                    "side": "edge" if c in h.edge else "cloud",
                }
        if total is not None:
            out["topologies"][name] = _round(total)
    return out
