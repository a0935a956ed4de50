"""Word count's bound: what the pipeline as written costs per word with no runtime at all.

Issue 20's target 3 asks Headwater's word count for half of the Python floor's
rate. This measures, in one process and one core, the CPU per word of:

* ``floor``: ``bench/wc/floor.py``'s loop (a split, a dict update and a result
  per word);
* ``sender``: the first stage of any two-process split: split each sentence
  and pack the words of a batch of sentences as ``[key, value]`` records
  (Headwater's frame body: one msgpack encode per batch);
* ``receiver``: the second stage with nothing of a runtime: unpack the batch,
  then per word the pipeline's own steps (``one``, ``add_counts`` through a
  dict, the sink's ``Collect``), as ``bench/wc/headwater_topology.py`` has them.

* ``summary``: the bench's sink once it has every result: one pass over them
  (``functions.summary``). Not on a run's rate path (a run ends when its last result
  arrives, before the summary, as the floor's does), but in the sink instance's CPU, so
  the runtime's share of the instances' CPU a word is what sender, receiver and summary
  leave.

* ``local_first``: one of two processes of a shape that is not a split: it
  takes half the sentences, splits them, counts the words whose key
  partition (``partition_of``, two tasks) is its own and packs the others'
  for its peer, then unpacks what its peer packed for it and counts those
  (the pipeline's steps as in ``receiver``). Its CPU is over all the words:
  two such processes run side by side on the two cores.

From these it derives the best rate any runtime could reach on two cores,
for one process per stage (the slower stage sets the pace), for two of
each (all four share two cores) and for the local-first pair, as a fraction
of the floor. Runners alternate within each of ``--runs`` repetitions;
figures are medians. The floor runs with Python's garbage collector as it
comes; the other stages as an instance process tunes it (``common/runtime/_gc.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

from bench.wc import functions as wc
from headwater.common.runtime._gc import tune_for_records

RESULTS = Path(__file__).with_name("results")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--size", type=int, default=50_000, help="sentences")
    p.add_argument("--runs", type=int, default=7, help="repetitions of each stage")
    p.add_argument("--out", type=Path, default=RESULTS / "wc-bound.json")


def _sink_results(sentences: list[str]) -> list[tuple[str, int]]:
    """What a sink holds at the end: each word with its running count."""
    totals: dict[str, int] = {}
    results = []
    for sentence in sentences:
        for word in wc.split(sentence):
            totals[word] = c = totals.get(word, 0) + 1
            results.append((word, c))
    return results


def _stages(sentences: list[str]) -> dict[str, Callable[[], None]]:
    pack = msgpack.Packer(use_bin_type=True).pack
    batch = wc.BATCH
    frames = [
        pack([[w, w] for s in sentences[i : i + batch] for w in wc.split(s)])
        for i in range(0, len(sentences), batch)
    ]
    split, one, add_counts, count = wc.split, wc.one, wc.add_counts, wc.count

    def floor() -> None:
        totals: dict[str, int] = {}
        results = []
        for sentence in sentences:
            for word in split(sentence):
                c = totals[word] = count(totals.get(word), word)
                results.append((word, c))

    results = _sink_results(sentences)

    def summary() -> None:
        wc.summary(results)

    def sender() -> None:
        for i in range(0, len(sentences), batch):
            out = []
            for sentence in sentences[i : i + batch]:
                for word in split(sentence):
                    out.append([word, word])
            pack(out)

    def receiver() -> None:
        os.environ.setdefault("BENCH_EXPECT", "0")
        from bench.peer_kit import Collect  # reads BENCH_* when imported

        totals: dict[str, Any] = {}
        get, sink = totals.get, Collect(wc.summary, wc.latency_key)
        for frame in frames:
            for key, word in msgpack.unpackb(frame, raw=False, use_list=False):
                v = one(word)
                acc = get(key)
                acc = v if acc is None else add_counts(acc, v)
                totals[key] = acc
                sink(acc)

    from headwater.dsl import partition_of

    half = sentences[::2]  # this process's sentences; its peer has the others
    part = {w: partition_of(w, 2) for w in wc.VOCABULARY}.__getitem__  # cached, as a router
    from_peer = [  # what the peer packed for this process (its sentences' words of ours)
        pack([[w, w] for s in sentences[i + 1 : i + batch : 2] for w in wc.split(s) if not part(w)])
        for i in range(0, len(sentences), batch)
    ]

    def local_first() -> None:
        # the receiver's steps written out again, not called: a call per word would be a
        # cost of this measurement, not of the shape
        os.environ.setdefault("BENCH_EXPECT", "0")
        from bench.peer_kit import Collect

        totals: dict[str, Any] = {}
        get, sink = totals.get, Collect(wc.summary, wc.latency_key)
        half_batch = batch // 2
        for i in range(0, len(half), half_batch):
            out = []
            for sentence in half[i : i + half_batch]:
                for word in split(sentence):
                    if part(word):
                        out.append([word, word])
                        continue
                    v = one(word)
                    acc = get(word)
                    acc = v if acc is None else add_counts(acc, v)
                    totals[word] = acc
                    sink(acc)
            pack(out)
        for frame in from_peer:
            for key, word in msgpack.unpackb(frame, raw=False, use_list=False):
                v = one(word)
                acc = get(key)
                acc = v if acc is None else add_counts(acc, v)
                totals[key] = acc
                sink(acc)

    return {
        "floor": floor,
        "sender": sender,
        "receiver": receiver,
        "summary": summary,
        "local_first": local_first,
    }


def run(args: argparse.Namespace) -> int:
    rng = random.Random(11)
    sentences = [
        " ".join(rng.choices(wc.VOCABULARY, k=wc.WORDS_PER_SENTENCE)) for _ in range(args.size)
    ]
    words = args.size * wc.WORDS_PER_SENTENCE
    stages = _stages(sentences)
    times: dict[str, list[float]] = {name: [] for name in stages}
    default = gc.get_threshold()
    for _ in range(args.runs):
        for name, fn in stages.items():
            if name != "floor":  # the stages as an instance process runs them
                tune_for_records()
            t = time.process_time()
            fn()
            times[name].append((time.process_time() - t) / words * 1e6)
            gc.unfreeze()
            gc.set_threshold(*default)
    us = {name: round(statistics.median(ts), 4) for name, ts in times.items()}
    one_each = us["floor"] / max(us["sender"], us["receiver"])
    two_each = min(2 * us["floor"] / (us["sender"] + us["receiver"]), 2.0)
    local_first = us["floor"] / us["local_first"]
    result = {
        "words": words,
        "runs": args.runs,
        "cpu_us_per_word": us,
        "best_fraction_of_floor": {
            "one process per stage": round(one_each, 3),
            "two processes per stage, two cores": round(two_each, 3),
            "local first, two processes, two cores": round(local_first, 3),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0
