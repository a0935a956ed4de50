"""headwater.heronpy.streamlet: Heron's streamlet API on a real cluster, with exact outcomes.

Heron's own Python implementation fails on repartition, clone, outer joins and
integer tumbling windows; these run here.
"""

from __future__ import annotations

import json
import runpy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.heronpy.streamlet.windowconfig import WindowConfig

from ..integration._support import TOPOLOGIES, running, wait_for

pytestmark = pytest.mark.cluster
TOPOLOGY = TOPOLOGIES / "streamlets.py"


def _read(out: Path, name: str) -> list[Any]:
    rows: list[Any] = []
    for f in sorted(out.glob(f"{name}-*.jsonl")):
        rows += [json.loads(line) for line in f.read_text().splitlines() if line]
    return rows


def _sides(joined: list[Any]) -> tuple[set[str], set[str]]:
    return (
        {a for _, (a, _b) in joined if a is not None},
        {b for _, (_a, b) in joined if b is not None},
    )


def test_word_count_clone_repartition_and_outer_join(tmp_path: Path) -> None:
    spec = runpy.run_path(str(TOPOLOGY))
    words = [w for s in spec["SENTENCES"] for w in s.split()]
    out = tmp_path / "out"
    # the two sources may fall into different 30 s windows (a boundary between them, or a
    # loaded machine): wait for every record of both sides, not for the first window's joins
    every_left = {v for _, v in spec["LEFT"]}
    every_right = {v for _, v in spec["RIGHT"]}
    with running(TOPOLOGY, env={"STREAMLET_OUT": str(out)}) as c:
        plan = c.get("/plan")
        assert len([i for i in plan["instances"] if i["component"] == "repartition-3"]) == 3
        wait_for(
            lambda: (
                sum(n for _, n in _read(out, "counts")) >= len(words)
                and len(_read(out, "copies")) >= len(words)
                and _sides(_read(out, "joined")) == (every_left, every_right)
            ),
            120,
            "the counts, the copies and every record of both sides joined",
        )
    # an int tumbling window: summed over its windows, each word's count is exact
    totals: Counter[str] = Counter()
    for word, n in _read(out, "counts"):
        totals[word] += n
    assert totals == Counter(words)
    # clone + repartition by a function: every word once more, spread over three tasks
    assert Counter(_read(out, "copies")) == Counter(words)
    assert len(list(out.glob("copies-*.jsonl"))) >= 2
    # outer join: keys on one side only come out with None; the rest pair up within a window
    joined = _read(out, "joined")
    left, right = dict(spec["LEFT"]), dict(spec["RIGHT"])
    lefts = {v: k for k, v in spec["LEFT"]}
    rights = {v: k for k, v in spec["RIGHT"]}
    for key, (a, b) in joined:
        assert (a is None or lefts[a] == key) and (b is None or rights[b] == key)
    assert {a for _, (a, _b) in joined if a is not None} == set(lefts)
    assert {b for _, (_a, b) in joined if b is not None} == set(rights)
    only_left = sorted(a for k, (a, b) in joined if k in ("k0", "k1", "k2"))
    assert only_left == sorted(v for v, k in lefts.items() if k in ("k0", "k1", "k2"))
    assert all(b is None for k, (_a, b) in joined if k in ("k0", "k1", "k2"))
    assert all(a is None for k, (a, _b) in joined if k == "k6")
    pairs = [(a, b) for k, (a, b) in joined if a is not None and b is not None]
    if not any(k in ("k3", "k4", "k5") and None in (a, b) for k, (a, b) in joined):
        # both sides of k3..k5 fell in one window: every pairing, once
        expected = sorted((a, b) for a, ka in lefts.items() for b, kb in rights.items() if ka == kb)
        assert sorted(pairs) == expected
    assert left and right


def test_window_config_takes_ints_and_timedeltas() -> None:
    import datetime

    assert WindowConfig.create_tumbling_window(10)._assigner().size == 10_000
    sliding = WindowConfig.create_sliding_window(datetime.timedelta(seconds=10), 2)
    assert (sliding._window_duration, sliding._slide_interval) == (10, 2)
    with pytest.raises(RuntimeError, match="positive int"):
        WindowConfig.create_tumbling_window(1.5)
    uneven = WindowConfig.create_sliding_window(10, 3)  # as in Heron: no multiple needed
    assert (uneven._window_duration, uneven._slide_interval) == (10, 3)
