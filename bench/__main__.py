"""Entry point: ``python -m bench WORKLOAD [options]``.

``python -m bench --help`` lists the workloads.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from bench import (
    checkpoint_store,
    compose,
    console,
    demo_train,
    dsl_fusion,
    edge,
    edge_scoring,
    edits,
    exactly_once,
    faults,
    fleet,
    health,
    moves,
    peers,
    profile,
    relay,
    scale,
    scoring,
    spark_latency,
    spark_rollout,
    spark_rollup,
    spark_spec,
    spark_train,
    startup,
    wc_bound,
    wordcount,
)


@dataclass(frozen=True)
class Workload:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


MODULES: dict[str, ModuleType] = {
    "checkpoint-store": checkpoint_store,
    "compose": compose,
    "console": console,
    "demo-train": demo_train,
    "dsl-fusion": dsl_fusion,
    "edge": edge,
    "edge-scoring": edge_scoring,
    "edits": edits,
    "exactly-once": exactly_once,
    "faults": faults,
    "fleet": fleet,
    "health": health,
    "moves": moves,
    "peers": peers,
    "profile": profile,
    "relay": relay,
    "scale": scale,
    "scoring": scoring,
    "spark-latency": spark_latency,
    "spark-rollout": spark_rollout,
    "spark-rollup": spark_rollup,
    "spark-spec": spark_spec,
    "spark-train": spark_train,
    "startup": startup,
    "wc-bound": wc_bound,
    "wordcount": wordcount,
}
WORKLOADS: dict[str, Workload] = {
    name: Workload((m.__doc__ or "").splitlines()[0], m.add_arguments, m.run)
    for name, m in MODULES.items()
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Headwater benchmarks.")
    sub = parser.add_subparsers(
        dest="workload", required=True, metavar="WORKLOAD", title="workloads"
    )
    for name, workload in WORKLOADS.items():
        p = sub.add_parser(
            name,
            help=workload.help,
            description=workload.help,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        workload.add_arguments(p)
    args = parser.parse_args(argv)
    return WORKLOADS[args.workload].run(args)


if __name__ == "__main__":
    sys.exit(main())
