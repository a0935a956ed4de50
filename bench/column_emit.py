"""The emitter alone: CPU per word of columns keyed by one field, split by task or tuple by tuple.

A word count's splitting stage emits its words and counts as two columns
(``Context.emitter_columns``) on a stream grouped by the word over ``--tasks`` tasks. This
runs the runtime's ``Emitter`` in this process, with no socket and no stream manager, over
``--words`` words of a 5,000-word vocabulary given in calls of each ``--per-call`` size, and
measures the CPU per word of the emits and the frames' encoding (``send``) and of decoding
those frames back to rows (``receive``), two ways alternately: ``split`` (the rows of a call
split into each task's columns, ``Router.by_field``) and ``tuples`` (each row routed by the
grouping's selector, as before). Medians of ``--runs``; the garbage collector tuned as an
instance process tunes it.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import time
from pathlib import Path
from typing import Any

from headwater.common.api import Bolt, Spout, Topology, fields, global_
from headwater.common.plan._routing import Router
from headwater.common.runtime._emitter import Emitter
from headwater.common.runtime._gc import tune_for_records
from headwater.common.wire import data_rows, parse_frame

LOG = logging.getLogger("bench.column_emit")


class _Words(Spout):
    outputs = ("word", "count")

    def next_tuple(self) -> None:
        pass


class _Count(Bolt):
    def process(self, tup: Any) -> None:
        pass


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--words", type=int, default=200_000)
    p.add_argument("--per-call", default="10,100,1000", help="words a call, comma-separated")
    p.add_argument("--tasks", type=int, default=2, help="counting tasks the words go to")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--out", type=Path, default=None)


def _topology(tasks: int) -> Topology:
    return (
        Topology("words")
        .add_spout("split", _Words)
        .add_bolt("count", _Count, inputs={"split": fields("word")}, parallelism=tasks)
        .add_bolt("sink", _Count, inputs={"count": global_()})
    )


def _once(topology: Topology, calls: list[list[list[Any]]], split: bool) -> tuple[float, float]:
    sink: list[bytes] = []
    em = Emitter(Router(topology, "split", None, seed=0), 1, "split", sink.append, 1000, 1, LOG)
    emit = em.unrooted_columns("default", {})
    if not split:
        em._routes["default"].by_field = None  # the tuple-by-tuple path
    began = time.process_time()
    for cols in calls:
        emit(cols)
    em.flush_all()
    send = time.process_time() - began
    began = time.process_time()
    for frame in sink:
        data_rows(parse_frame(frame))
    return send, time.process_time() - began


def run(args: argparse.Namespace) -> int:
    sizes = [int(s) for s in args.per_call.split(",")]
    if args.words < 1 or args.tasks < 2 or args.runs < 1 or min(sizes) < 1:
        print("column-emit: --words, --per-call and --runs at least 1, --tasks at least 2")
        return 2
    tune_for_records()  # as an instance process does
    rng = random.Random(1)
    vocabulary = [f"word{i}" for i in range(5000)]
    topology = _topology(args.tasks)
    results: dict[str, Any] = {"words": args.words, "tasks": args.tasks, "per_call": {}}
    for size in sizes:
        calls: list[list[list[Any]]] = []
        for _ in range(max(1, args.words // size)):
            words = [rng.choice(vocabulary) for _ in range(size)]
            calls.append([words, [1] * size])
        n = len(calls) * size
        got: dict[str, list[tuple[float, float]]] = {"tuples": [], "split": []}
        for _ in range(args.runs):
            for way in ("tuples", "split"):
                got[way].append(_once(topology, calls, way == "split"))
        row = {
            way: {
                "send_ns": round(statistics.median(s for s, _ in runs) / n * 1e9),
                "receive_ns": round(statistics.median(r for _, r in runs) / n * 1e9),
            }
            for way, runs in got.items()
        }
        results["per_call"][size] = row
        print(
            f"{size:>5} words a call: send {row['tuples']['send_ns']} -> "
            f"{row['split']['send_ns']} ns a word, receive {row['tuples']['receive_ns']} -> "
            f"{row['split']['receive_ns']}",
            flush=True,
        )
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0
