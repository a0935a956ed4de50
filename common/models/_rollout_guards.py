"""A rollout's guards: bounds on what the watched agents count while a version is watched.

A guard is ``EXPR<=BOUND``, judged over the growth of the watched agents'
counters of the component during one watch window (a canary's or a wave's):
``EXPR`` is a counter or the ratio ``A/B`` of two. A counter is ``errors``
(exceptions + dead letters), ``exceptions``, ``dead_letters``, ``executed``,
``emitted``, or any user counter by its name (``scored``, ``anomalies``,
``unscored``, ``score_us``, ``out_of_range``: what a scoring step or the
anomaly step counts). So ``score_us/scored<=800`` bounds the µs spent per
scored record, ``out_of_range/scored<=0.01`` the share of scores outside the
model's expected range, ``anomalies/scored<=0.2`` the anomaly rate.

A ratio whose divisor did not grow cannot be judged, and fails ("nothing to
judge by"), as does a window in which the counter a rollout ``must_grow`` did
not (a scoring step's ``scored``). A plain counter above its bound fails as
soon as it is seen (counters only grow); ratios are judged once the window is
over. The guards a rollout runs by (``guards_for``): ``errors<=MAX_ERRORS``
always, ``anomalies/scored<=MAX_ANOMALY_RATE`` for the JSON anomaly kind, and
the user's; a user's guard on the same expression replaces a default one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BUILT_IN = ("errors", "exceptions", "dead_letters", "executed", "emitted")
"""The counters every component has (the rest are user counters, by name)."""
MAX_GUARDS = 16
_COUNTER = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"
_GUARD = re.compile(rf"\s*({_COUNTER})\s*(?:/\s*({_COUNTER})\s*)?<=\s*(\S+)\s*")
SYNTAX = (
    "a guard is EXPR<=BOUND, EXPR a counter (errors, exceptions, dead_letters, executed, "
    "or a user counter such as scored) or a ratio A/B of two, e.g. errors<=0, "
    "score_us/scored<=500, out_of_range/scored<=0.01"
)


@dataclass(frozen=True)
class Guard:
    """``counter`` (over ``per``, if a ratio) must stay at most ``bound``."""

    counter: str
    per: str | None
    bound: float

    @property
    def expr(self) -> str:
        return f"{self.counter}/{self.per}" if self.per else self.counter

    def text(self) -> str:
        return f"{self.expr}<={self.bound:g}"

    def value(self, growth: Mapping[str, float]) -> float | None:
        """Its value over ``growth`` (the counters' growth); None for a ratio whose
        divisor did not grow (nothing to judge by)."""
        top = growth.get(self.counter, 0.0)
        if self.per is None:
            return top
        below = growth.get(self.per, 0.0)
        return top / below if below else None


def parse_guard(text: str) -> Guard:
    """The guard ``text`` says; ValueError saying what to write when it is not one."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a guard: {SYNTAX}")
    found = _GUARD.fullmatch(text)
    if found is None:
        raise ValueError(f"{text[:80]!r} is not a guard: {SYNTAX}")
    counter, per, bound_text = found.groups()
    try:
        bound = float(bound_text)
    except ValueError:
        raise ValueError(f"{text[:80]!r}: the bound {bound_text!r} is not a number") from None
    if not math.isfinite(bound) or bound < 0:
        raise ValueError(f"{text[:80]!r}: the bound is a number, 0 or more")
    if per == counter:
        raise ValueError(f"{text[:80]!r}: a ratio of a counter to itself is always 1")
    return Guard(counter, per, bound)


def guards_for(
    user: Sequence[str], anomaly_kind: bool, max_anomaly_rate: float, max_errors: int
) -> list[str]:
    """The guards a rollout runs by (their text, as kept in its record): the defaults,
    then the user's; ValueError (saying what to write) for a malformed user guard."""
    if len(user) > MAX_GUARDS:
        raise ValueError(f"at most {MAX_GUARDS} guards")
    mine = [parse_guard(g) for g in user]
    defaults = [Guard("errors", None, float(max_errors))]
    if anomaly_kind:
        defaults.append(Guard("anomalies", "scored", float(max_anomaly_rate)))
    given = {g.expr for g in mine}
    return [g.text() for g in defaults if g.expr not in given] + [g.text() for g in mine]


def early(guards: Sequence[str], growth: Mapping[str, float]) -> str:
    """Why a plain counter is already above its bound (counters only grow), or ""."""
    for g in map(parse_guard, guards):
        value = g.value(growth)
        if g.per is None and value is not None and value > g.bound:
            return f"{g.expr} {value:g} above {g.bound:g}"
    return ""


def judge(
    guards: Sequence[str], growth: Mapping[str, float], must_grow: str = ""
) -> tuple[list[dict[str, Any]], str]:
    """Each guard's value over ``growth`` and whether it holds, and why the window fails
    ("" when every guard holds)."""
    values: list[dict[str, Any]] = []
    why = ""
    if must_grow and not growth.get(must_grow, 0.0):
        why = f"the watched agents counted no {must_grow} in the window: nothing to judge by"
    for g in map(parse_guard, guards):
        value = g.value(growth)
        ok = value is not None and value <= g.bound
        values.append(
            {"guard": g.text(), "value": None if value is None else round(value, 6), "ok": ok}
        )
        if ok or why:
            continue
        if value is None:
            why = f"{g.expr}: no {g.per} in the window, nothing to judge by"
        else:
            why = f"{g.expr} {value:.3f} above {g.bound:g}"
    return values, why
