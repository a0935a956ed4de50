"""Entry point: ``python -m bench WORKLOAD [options]``.

``python -m bench --help`` lists the workloads.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Workload:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# workload -> its module: each is imported only when it runs (or for the list in --help),
# so that a workload runs where the others' dependencies (Selenium, PySpark) are missing
MODULES: dict[str, str] = {
    "checkpoint-store": "bench.checkpoint_store",
    "column-emit": "bench.column_emit",
    "compose": "bench.compose",
    "compose-checks": "bench.compose_checks",
    "console": "bench.console",
    "demo-train": "bench.demo_train",
    "dsl-fusion": "bench.dsl_fusion",
    "edge": "bench.edge",
    "edge-scoring": "bench.edge_scoring",
    "edits": "bench.edits",
    "exactly-once": "bench.exactly_once",
    "faults": "bench.faults",
    "fleet": "bench.fleet",
    "health": "bench.health",
    "idle": "bench.idle",
    "moves": "bench.moves",
    "peers": "bench.peers",
    "profile": "bench.profile",
    "relay": "bench.relay",
    "runtime-share": "bench.runtime_share",
    "scale": "bench.scale",
    "scoring": "bench.scoring",
    "spark-latency": "bench.spark_latency",
    "spark-rollout": "bench.spark_rollout",
    "spark-rollup": "bench.spark_rollup",
    "spark-spec": "bench.spark_spec",
    "spark-start": "bench.spark_start",
    "spark-train": "bench.spark_train",
    "startup": "bench.startup",
    "wc-bound": "bench.wc_bound",
    "wordcount": "bench.wordcount",
}


def _workload(name: str) -> Workload:
    m: ModuleType = importlib.import_module(MODULES[name])
    return Workload((m.__doc__ or "").splitlines()[0], m.add_arguments, m.run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Headwater benchmarks.")
    sub = parser.add_subparsers(
        dest="workload", required=True, metavar="WORKLOAD", title="workloads"
    )
    argv = sys.argv[1:] if argv is None else argv
    chosen = argv[0] if argv and argv[0] in MODULES else None
    for name in [chosen] if chosen else MODULES:
        workload = _workload(name)
        p = sub.add_parser(
            name,
            help=workload.help,
            description=workload.help,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        workload.add_arguments(p)
    args = parser.parse_args(argv)
    return _workload(args.workload).run(args)


if __name__ == "__main__":
    sys.exit(main())
