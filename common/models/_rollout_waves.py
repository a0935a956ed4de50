"""A rollout's waves: which agents run the new version at each step after the canary.

``--waves 10,50,100`` (REST ``waves``) are cumulative percentages of the agents
that run the component; the last is 100 (the step that makes the version
everyone's default). ``plan_waves`` turns them into lists of agent ids,
deterministically: the canary's agents first, then the online agents, then the
offline ones, each group in sorted order, so that a wave is judged by agents
that report. Each wave has at least one agent more than the one before, up to
all of them; a wave that would add none (more waves than agents) is dropped, but
the last is kept, since it makes the version the default, also for the agents
that are offline now and run it when they return.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

MAX_WAVES = 10
SYNTAX = "waves are cumulative percentages of the agents, the last 100, e.g. 10,50,100"


def waves_problem(waves: Sequence[object]) -> str | None:
    """Why ``waves`` are not a rollout's waves, or None."""
    if not isinstance(waves, list | tuple) or not waves:
        return f"waves must be a non-empty list of numbers: {SYNTAX}"
    if len(waves) > MAX_WAVES:
        return f"at most {MAX_WAVES} waves: {SYNTAX}"
    if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in waves):
        return f"waves must be numbers: {SYNTAX}"
    numbers = [float(w) for w in waves]
    if not all(0 < w <= 100 for w in numbers):
        return f"each wave is a percentage above 0, at most 100: {SYNTAX}"
    if any(b <= a for a, b in itertools.pairwise(numbers)):
        return f"waves must grow: {SYNTAX}"
    if numbers[-1] != 100:
        return f"the last wave must be 100 (everyone): {SYNTAX}"
    return None


def parse_waves(text: str) -> list[float]:
    """``10,50,100`` -> ``[10.0, 50.0, 100.0]``; ValueError saying what to write."""
    try:
        waves = [float(part.strip().rstrip("%")) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--waves {text[:80]!r}: {SYNTAX}") from None
    problem = waves_problem(waves)
    if problem is not None:
        raise ValueError(f"--waves {text[:80]!r}: {problem}")
    return waves


def order_agents(agents: Sequence[str], first: Sequence[str], online: Sequence[str]) -> list[str]:
    """``agents`` in the order waves take them: ``first`` (the canary's), then online ones,
    then the rest; each group sorted."""
    rest = [a for a in sorted(agents) if a not in first]
    return (
        sorted(a for a in agents if a in first)
        + [a for a in rest if a in online]
        + [a for a in rest if a not in online]
    )


def plan_waves(
    waves: Sequence[float], ordered: Sequence[str], already: int = 0
) -> list[tuple[float, list[str]]]:
    """Each wave's percentage and agents (cumulative) out of ``ordered`` (``order_agents``),
    when the first ``already`` of them (the canary's) run the version before the first
    wave. The last wave is always there (it makes the version the default); another that
    would add no agent is dropped."""
    total = len(ordered)
    out: list[tuple[float, list[str]]] = []
    last = already
    for i, percent in enumerate(waves):
        final = i == len(waves) - 1
        share = math.ceil(round(percent * total / 100, 9))
        count = total if final else min(total, max(share, last + 1))
        if count <= last and not final:
            continue
        out.append((float(percent), list(ordered[:count])))
        last = count
    return out
