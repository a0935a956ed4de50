"""Headwater, Bytewax, PySpark and the Python floor side by side: IoT pipeline, word count.

Two workloads, each with its user functions, data, floor, Headwater DSL
pipeline, Bytewax flow and PySpark query in a package of its own:

* ``--pipeline iot`` (``bench/iot/``): parse JSON -> validate -> key by sensor -> 10 s
  event-time tumbling window statistics -> anomaly flag -> sink, over
  ``--size`` readings (1% malformed); the rate is in readings/s;
* ``--pipeline wordcount`` (``bench/wc/``, Heron's shape): sentences -> split -> key by
  word -> running count -> sink, over ``--size`` sentences of 10 words; the
  rate is in words/s.

Every runner reads the same file of msgpack batches and calls the same
functions; ``bench/peer_run.py`` lists the runners (floor, Headwater at most and
exactly once, one task per stage or ``--partitions`` tasks per stage on
``--containers`` stream managers, Bytewax with one, two or ``--partitions``
workers, PySpark in local mode) and measures one run of each. Spark reads the
batches as text files (``bench/peer_pyspark.py``).

Each run goes as fast as it can (the rate counts from the first batch read
to the last record at the sink, so start-up is left out), or, with
``--rate``, is offered records at a fixed rate (``half``: half of
Headwater's maximum, measured first) and reports end-to-end latency (see
``peer_kit``). Every runner must
produce the same results (the bench refuses a run that disagrees, and at a
fixed rate keeps it marked ``disagrees``; for
PySpark's word count, whose update mode emits a row per word changed in a
micro-batch, the final counts). ``--runners`` picks some of them. CPU
seconds and peak RSS are per process, sampled every 0.1 s. Runners alternate
within each of ``--runs`` repetitions; figures are medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.iot import functions as iot
from bench.peer_run import PARTITIONED, RUNNERS, one
from bench.wc import functions as wc

RESULTS = Path(__file__).with_name("results")
# workload -> (its functions, what the rate counts, what the source offers)
WORKLOADS: dict[str, tuple[Any, str, str]] = {
    "iot": (iot, "readings", "readings"),
    "wordcount": (wc, "words", "sentences"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pipeline", choices=sorted(WORKLOADS), default="iot")
    p.add_argument("--size", type=int, default=500_000, help="readings, or sentences")
    p.add_argument("--runs", type=int, default=3, help="repetitions of each runner")
    p.add_argument(
        "--rate",
        type=_rate,
        default=0.0,
        help="offer this many readings (or sentences) a second and measure latency; "
        "'half': half of Headwater's maximum, measured first in the same run; "
        "0: as fast as each runner can",
    )
    p.add_argument(
        "--checkpoints",
        type=float,
        default=1.0,
        help="headwater-eo: exactly once, checkpoint interval (s)",
    )
    p.add_argument(
        "--partitions",
        type=positive,
        default=2,
        help="headwater-par*: tasks per stage; bytewax-par: workers and source partitions",
    )
    p.add_argument(
        "--containers",
        type=positive,
        default=1,
        help="headwater-par*: containers, each with its stream manager",
    )
    p.add_argument(
        "--runners",
        type=_runners,
        default=None,
        help=f"comma-separated, of {','.join(RUNNERS)} (default: all)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="default: results/peers-WORKLOAD[-rate].json"
    )


def _rate(text: str) -> float | str:
    if text == "half":
        return text
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give records a second, or 'half'") from None
    if rate < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a rate cannot be negative")
    return rate


def positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number, 1 or more")
    return n


def _runners(text: str) -> tuple[str, ...]:
    chosen = tuple(r.strip() for r in text.split(",") if r.strip())
    if not chosen or any(r not in RUNNERS for r in chosen):
        raise argparse.ArgumentTypeError(f"{text!r}: runners are among {','.join(RUNNERS)}")
    return chosen


def agrees(runner: str, package: str, summary: dict[str, Any], floor: dict[str, Any]) -> bool:
    if runner == "pyspark" and package == "wc":
        # update mode emits one row per word a micro-batch changed, not one per word
        # occurrence, so PySpark's records cannot be the others'; its final counts must be
        return all(summary[k] == floor[k] for k in ("distinct", "total"))
    if runner == "floor-par" and package == "wc":
        # each process counts its own file's words: every word counted, its distinct
        # words once per file that has them
        return all(summary[k] == floor[k] for k in ("records", "total"))
    return summary == floor


def run(args: argparse.Namespace) -> int:
    functions, unit, offered = WORKLOADS[args.pipeline]
    splits = hasattr(functions, "split_data")
    runners = args.runners or tuple(r for r in RUNNERS if splits or r not in PARTITIONED)
    if not splits and any(r in PARTITIONED for r in runners):
        raise SystemExit(f"{args.pipeline} has no partitioned variant ({', '.join(PARTITIONED)})")
    package = functions.__name__.split(".")[1]
    work = Path(tempfile.mkdtemp(prefix=f"hw-bench-{args.pipeline}-"))
    data = work / "data.msgpack"
    functions.make_data(data, args.size)
    if any(r in PARTITIONED for r in runners):  # one file per task, before the run
        args.expect_parts = functions.split_data(data, args.partitions)
    at_max = argparse.Namespace(**{**vars(args), "rate": 0.0})
    first = one(package, "floor", data, work, 0, args.size, at_max)
    expect = first["summary"]["records"]
    n = args.size if unit == "readings" else expect  # every reading read, or every word
    if args.rate == "half":  # of Headwater's maximum, in what the source offers
        top = one(package, "headwater", data, work, expect, n, at_max)["per_s"]
        args.rate = round(top * args.size / n / 2, -2)
        print(f"Headwater's maximum: {top:,} {unit}/s; offering {args.rate:g} {offered}/s")
    arrival = functions.arrival_index(data, args.size) if args.rate else None
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in runners}
    for i in range(args.runs):
        for runner in runners:
            r = one(package, runner, data, work, expect, n, args, arrival)
            wrong = not agrees(runner, package, r["summary"], first["summary"])
            if wrong and not args.rate:
                raise RuntimeError(f"{runner} disagrees: {r['summary']} != {first['summary']}")
            if wrong:  # paced, a runtime may drop records as late: keep the run, say so
                r["disagrees"] = True
            runs[runner].append(r)
            lat = r.get("latency_ms")
            print(
                f"run {i + 1} {runner}: {r['per_s']:,} {unit}/s"
                + (f", latency ms {lat}" if lat else "")
                + (f"; WRONG RESULTS {r['summary']}" if wrong else ""),
                flush=True,
            )
    medians = {k: statistics.median(r["per_s"] for r in v) for k, v in runs.items()}
    result: dict[str, Any] = {
        "pipeline": args.pipeline,
        "size": args.size,
        "partitions": args.partitions,
        "containers": args.containers,
        "unit": f"{unit}/s",
        "offered": f"{args.rate:g} {offered}/s" if args.rate else "maximum",
        "summary": first["summary"],
        "median_per_s": medians,
    }
    if args.rate:
        result["median_latency_ms"] = {
            k: {q: statistics.median(r["latency_ms"][q] for r in v) for q in ("p50", "p99", "p999")}
            for k, v in runs.items()
        }
    elif "headwater" in medians:
        result["ratios"] = {
            f"headwater / {k}": round(medians["headwater"] / m, 2)
            for k, m in medians.items()
            if k != "headwater"
        }
    if not args.rate and "floor" in medians:  # issue 20, target 1: / floor, / best Bytewax
        best = max((m for k, m in medians.items() if k.startswith("bytewax")), default=None)
        result["targets"] = {
            k: {
                "/ floor": round(medians[k] / medians["floor"], 2),
                **({"/ best bytewax": round(medians[k] / best, 2)} if best else {}),
            }
            for k in medians
            if k.startswith("headwater")
        }
    result["runs"] = runs
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    for runner in runners:
        print(f"{runner}: processes of the last run: {runs[runner][-1]['processes']}")
    suffix = "-rate" if args.rate else ""
    out = args.out or RESULTS / f"peers-{args.pipeline}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0
