"""Scaling sweep: the data-parallel runners at 1, 2, 4, 8, 16 tasks against the floor.

``python -m bench scale --pipeline iot`` runs, at each point N of ``--points``, the
floor (one process, no runtime: the single-process figure every point is compared with),
``headwater-par`` (N tasks per stage on ``--containers`` stream managers) and
``bytewax-par`` (N worker processes and a source of N partitions, the peer at its best)
and, asked for with ``--runners``, ``floor-par`` (N floor processes at once, with no
exchange between them: what the machine gives N independent processes),
each ``--runs`` times, alternating within each repetition, over the same data split into
N files (``bench/peer_run.py`` has the runners). Points above the cores this process may run
on are left out and the result says so (``--oversubscribe`` runs them anyway).

For each point and runner it writes the median throughput, the parallel efficiency
(throughput / (N x the floor measured in the same repetition)), the CPU per record while
the run lasts (every process's CPU after the start mark, summed, over the records) and
the peak RSS of all the runner's processes summed; then ``scale-PIPELINE.json`` and the
curve, ``scale-PIPELINE.png`` (``bench/scale_plot.py``), in ``bench/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.peer_run import one
from bench.peers import RESULTS, WORKLOADS, agrees, positive
from bench.wordcount import machine

POINTS = (1, 2, 4, 8, 16)
RUNNERS = ("headwater-par", "bytewax-par")
# floor-par: N floor processes at once, with no exchange: what the machine gives N
# independent processes, the bound under any runtime's curve
CHOICES = (*RUNNERS, "floor-par")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pipeline", choices=sorted(WORKLOADS), default="iot")
    p.add_argument("--size", type=positive, default=300_000, help="readings, or sentences")
    p.add_argument("--runs", type=positive, default=2, help="repetitions at each point")
    p.add_argument(
        "--points",
        type=_points,
        default=POINTS,
        help="tasks per stage (Headwater) and workers (Bytewax), comma-separated",
    )
    p.add_argument(
        "--containers",
        type=_containers,
        default=0,
        help="Headwater's containers at every point; 'auto': one at 1 task, else "
        "max(2, ceil(N / 4)), so that a keyed stage crosses stream managers",
    )
    p.add_argument(
        "--runners",
        type=_runners,
        default=RUNNERS,
        help=f"comma-separated, of {','.join(CHOICES)}",
    )
    p.add_argument(
        "--oversubscribe",
        action="store_true",
        help="also run the points above this machine's cores",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="default: results/scale-PIPELINE.json (and .png)"
    )


def _points(text: str) -> tuple[int, ...]:
    try:
        points = tuple(sorted({int(t) for t in text.split(",") if t.strip()}))
    except ValueError:
        points = ()
    if not points or points[0] < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give task counts, e.g. 1,2,4")
    return points


def _containers(text: str) -> int:
    return 0 if text == "auto" else positive(text)


def _runners(text: str) -> tuple[str, ...]:
    chosen = tuple(r.strip() for r in text.split(",") if r.strip())
    if not chosen or any(r not in CHOICES for r in chosen):
        raise argparse.ArgumentTypeError(f"{text!r}: runners are among {','.join(CHOICES)}")
    return chosen


def containers_at(n: int, fixed: int) -> int:
    """Headwater's containers at ``n`` tasks per stage: ``fixed``, or (0) one for one task
    and otherwise at least two, one per four tasks."""
    return fixed or (1 if n == 1 else max(2, math.ceil(n / 4)))


def _point(
    functions: Any,
    package: str,
    n: int,
    data: Path,
    work: Path,
    floor: dict[str, Any],
    counted: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Every runner at ``n`` tasks, ``args.runs`` times, with the floor in each repetition;
    each run's results must be ``floor``'s (the first floor run's summary); ``counted``: the
    records the rate counts."""
    expect = floor["records"]
    run_args = argparse.Namespace(
        rate=0.0,
        checkpoints=1.0,
        partitions=n,
        containers=containers_at(n, args.containers),
        expect_parts=functions.split_data(data, n),
    )
    load = [round(os.getloadavg()[0], 2)]
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in ("floor", *args.runners)}
    for i in range(args.runs):
        for runner, done in runs.items():
            r = one(package, runner, data, work, expect, counted, run_args)
            if not agrees(runner, package, r.pop("summary"), floor):
                raise RuntimeError(f"{runner} at {n} tasks disagrees with the floor")
            done.append(r)
            print(
                f"{n} tasks, run {i + 1}, {runner}: {r['per_s']:,}/s, "
                f"{r['run_cpu_us']} us CPU a record, {r['peak_rss_mb']} MB",
                flush=True,
            )
        load.append(round(os.getloadavg()[0], 2))
    floors = [r["per_s"] for r in runs["floor"]]
    point: dict[str, Any] = {
        "tasks": n,
        "containers": run_args.containers,
        "load_average": [min(load), max(load)],
        "floor_per_s": statistics.median(floors),
    }
    for runner in args.runners:
        rs = runs[runner]
        point[runner] = {
            "per_s": statistics.median(r["per_s"] for r in rs),
            # against the floor of the same repetition, then the median
            "efficiency": round(
                statistics.median(r["per_s"] / (n * f) for r, f in zip(rs, floors, strict=True)),
                3,
            ),
            "/ floor": round(statistics.median(r["per_s"] for r in rs) / point["floor_per_s"], 2),
            "run_cpu_us": statistics.median(r["run_cpu_us"] for r in rs),
            "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
        }
    if set(RUNNERS) <= set(args.runners):
        point["headwater / bytewax"] = round(
            point["headwater-par"]["per_s"] / point["bytewax-par"]["per_s"], 2
        )
    point["runs"] = runs
    return point


def run(args: argparse.Namespace) -> int:
    functions, unit, _ = WORKLOADS[args.pipeline]
    package = functions.__name__.split(".")[1]
    where = machine()
    cores = where["nproc"]  # the cores this process may run on
    points = [n for n in args.points if args.oversubscribe or n <= cores]
    left_out = [n for n in args.points if n not in points]
    if left_out:
        print(
            f"this machine has {cores} cores: leaving out {left_out} "
            "(--oversubscribe runs them anyway)",
            flush=True,
        )
    if not points:
        print("no point of the sweep fits this machine's cores; give --points", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix=f"hw-bench-scale-{args.pipeline}-"))
    try:
        data = work / "data.msgpack"
        functions.make_data(data, args.size)
        floor_args = argparse.Namespace(rate=0.0, checkpoints=1.0, partitions=1, containers=1)
        first = one(package, "floor", data, work, 0, args.size, floor_args)
        # every reading read, or every word: what the rate counts (as in bench peers)
        counted = args.size if unit == "readings" else first["summary"]["records"]
        result: dict[str, Any] = {
            "pipeline": args.pipeline,
            "size": args.size,
            "unit": f"{unit}/s",
            "machine": where,
            "left_out": {
                "points": left_out,
                "why": f"more tasks than the machine's {cores} cores",
            }
            if left_out
            else None,
            "points": [
                _point(functions, package, n, data, work, first["summary"], counted, args)
                for n in points
            ],
        }
        # the single-process floor: the same at every point, so the median of them all
        result["floor_per_s"] = statistics.median(
            r["per_s"] for p in result["points"] for r in p["runs"]["floor"]
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = args.out or RESULTS / f"scale-{args.pipeline}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    from bench.scale_plot import plot  # matplotlib, only once there is a curve to draw

    plot(result, out.with_suffix(".png"))
    print(json.dumps(_table(result), indent=2))
    print(f"wrote {out} and {out.with_suffix('.png')}")
    return 0


def _table(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in p.items() if k != "runs"} for p in result["points"]]
