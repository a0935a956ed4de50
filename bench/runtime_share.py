"""The runtime's share of word count's CPU a word, from an A/B and ``bench wc-bound``.

Issue 39's target 3 asks for the runtime's CPU per record crossing a process boundary
halved. ``scripts/device-ab`` runs word count on the tree before a change and on this one,
alternating, and writes a line per runner and invocation to ``ab.log``: the side and its
repetition, the runner, records a second, CPU µs a record, and its instances' CPU seconds.
``bench wc-bound``, run the same hour, gives what the pipeline's own steps cost a word with
no runtime: the splitting stage (``sender``), the counting stage (``receiver``) and the
sink's one pass over its results at the end (``summary``). The runtime's share is the
instances' CPU a word less those three; this prints, per runner, the medians of each side
and the ratio of the shares (after / before: target 3 asks for at most 0.5)::

    python -m bench runtime-share --ab OUT/ab.log --bound wc-bound.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.wc.functions import WORDS_PER_SENTENCE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ab", type=Path, required=True, help="scripts/device-ab's ab.log")
    p.add_argument("--bound", type=Path, required=True, help="bench wc-bound's JSON")
    p.add_argument("--size", type=int, default=200_000, help="the A/B's sentences (AB_SIZE)")
    p.add_argument("--out", type=Path, default=None, help="the figures as JSON")


def shares(lines: list[str], stages_us: float, words: int) -> dict[str, Any]:
    """Per runner and side: median records/s, instances' CPU µs a word, the share."""
    got: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for line in lines:
        fields = line.split("\t")
        if len(fields) != 5:
            continue
        side, runner, per_s, _, instances_s = fields
        got[runner, side.split("-")[0]].append((float(per_s), float(instances_s)))
    out: dict[str, Any] = {}
    for (runner, side), runs in sorted(got.items()):
        cpu_us = statistics.median(cpu for _, cpu in runs) / words * 1e6
        out.setdefault(runner, {})[side] = {
            "runs": len(runs),
            "per_s": round(statistics.median(rate for rate, _ in runs)),
            "instances_cpu_us_per_word": round(cpu_us, 3),
            "runtime_share_us": round(cpu_us - stages_us, 3),
        }
    for sides in out.values():
        if "before" in sides and "after" in sides:
            before, after = sides["before"], sides["after"]
            base = before["runtime_share_us"]  # a bound at or above the instances': no ratio
            sides["share_ratio"] = round(after["runtime_share_us"] / base, 3) if base > 0 else None
            sides["rate_ratio"] = round(after["per_s"] / before["per_s"], 3)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        lines = args.ab.read_text().splitlines()
        us = json.loads(args.bound.read_text())["cpu_us_per_word"]
        stages = us["sender"] + us["receiver"] + us.get("summary", 0.0)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"runtime-share: cannot read the A/B log or the bound: {exc}")
        return 2
    if args.size < 1:
        print("runtime-share: --size must be at least 1")
        return 2
    words = args.size * WORDS_PER_SENTENCE
    result = {"stages_us_per_word": round(stages, 3), "runners": shares(lines, stages, words)}
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0
