"""Entry point: ``python -m bench WORKLOAD [options]``.

``python -m bench --help`` lists the workloads.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from bench import dsl_fusion, edge, edits, exactly_once, peers, profile, relay, wordcount


@dataclass(frozen=True)
class Workload:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


WORKLOADS: dict[str, Workload] = {
    "dsl-fusion": Workload(
        dsl_fusion.__doc__.splitlines()[0] if dsl_fusion.__doc__ else "",
        dsl_fusion.add_arguments,
        dsl_fusion.run,
    ),
    "edge": Workload(
        edge.__doc__.splitlines()[0] if edge.__doc__ else "",
        edge.add_arguments,
        edge.run,
    ),
    "edits": Workload(
        edits.__doc__.splitlines()[0] if edits.__doc__ else "",
        edits.add_arguments,
        edits.run,
    ),
    "exactly-once": Workload(
        exactly_once.__doc__.splitlines()[0] if exactly_once.__doc__ else "",
        exactly_once.add_arguments,
        exactly_once.run,
    ),
    "peers": Workload(
        peers.__doc__.splitlines()[0] if peers.__doc__ else "",
        peers.add_arguments,
        peers.run,
    ),
    "profile": Workload(
        profile.__doc__.splitlines()[0] if profile.__doc__ else "",
        profile.add_arguments,
        profile.run,
    ),
    "relay": Workload(
        relay.__doc__.splitlines()[0] if relay.__doc__ else "",
        relay.add_arguments,
        relay.run,
    ),
    "wordcount": Workload(
        wordcount.__doc__.splitlines()[0] if wordcount.__doc__ else "",
        wordcount.add_arguments,
        wordcount.run,
    ),
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
