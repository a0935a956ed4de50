"""`headwater spark rollup|train|run`: the cloud's Spark jobs (``run``: ``_spark_run_cli``).

Bad arguments, a missing landing folder, no Java or no PySpark end in a
message that says what to do and exit status 2, never a traceback. Ctrl-C while
Spark starts ends its JVM and says so in one line (exit status 130), as
``cloud/spark/_session.py`` describes.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from headwater._argtypes import number, whole
from headwater.common._exceptions import HeadwaterError

POSITIVE = number(0, above=True)
POSITIVE_INT = whole(1)

_INTERVAL = re.compile(r"^\d+ (second|minute|hour|day)s?$")


def add_parsers(sub: Any) -> None:
    """Add the ``spark`` command group to ``sub``."""
    spark: argparse.ArgumentParser = sub.add_parser(
        "spark", help="the cloud's Spark jobs: rollups of the landing zone, model training"
    )
    actions = spark.add_subparsers(metavar="ACTION")
    spark.set_defaults(func=lambda args: _usage(spark))

    rollup = actions.add_parser(
        "rollup",
        help="hourly and daily rollups of the landed readings into warehouse tables, exactly once",
        description="Reads LANDING/readings as a stream and keeps WAREHOUSE/{hourly,daily}_"
        "{sensor,site}/date=YYYY-MM-DD/data.parquet up to date (count, sum, mean, min, max, "
        "stddev, p95, anomaly rate per window), exactly once through crashes.",
    )
    rollup.add_argument(
        "--landing",
        required=True,
        type=Path,
        metavar="ROOT",
        help="the landing root: the folder holding readings/ (e.g. $IOT_OUT/landing)",
    )
    rollup.add_argument(
        "--warehouse", required=True, type=Path, metavar="DIR", help="where the tables go"
    )
    rollup.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        metavar="DIR",
        help="Spark's checkpoints (default: WAREHOUSE/_checkpoints); keep it with the warehouse",
    )
    mode = rollup.add_mutually_exclusive_group()
    mode.add_argument(
        "--once", action="store_true", help="one pass over what has landed, then exit"
    )
    mode.add_argument(
        "--continuous", action="store_true", help="keep rolling up new landings (the default)"
    )
    rollup.add_argument(
        "--interval",
        type=POSITIVE,
        default=5.0,
        metavar="S",
        help="--continuous: seconds between micro-batches (default 5)",
    )
    rollup.add_argument(
        "--watermark",
        type=_interval,
        default="10 minutes",
        metavar="DELAY",
        help="how late a reading may land and still count, e.g. '10 minutes' (default); "
        "later ones are dropped and counted",
    )
    rollup.add_argument(
        "--spark-master",
        default=None,
        metavar="URL",
        help="spark://HOST:7077 for a standalone cluster (default: local[*], embedded)",
    )
    rollup.add_argument(
        "--max-files",
        type=POSITIVE_INT,
        default=None,
        metavar="N",
        help="at most N landed files per micro-batch (default: all that are new)",
    )
    rollup.add_argument(
        "--source",
        choices=("files", "manifests"),
        default="files",
        help="files: Spark's file source (default); manifests: the landing manifests "
        "through a Python data source, measured, not trusted for --once after a crash "
        "(see docs/design.md)",
    )
    rollup.set_defaults(func=_cmd_rollup)

    from headwater._train_cli import add_train_parser

    add_train_parser(actions)

    from headwater._spark_run_cli import add_run_parser

    add_run_parser(actions)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _cmd_rollup(args: argparse.Namespace) -> int:
    from headwater.cloud.spark._rollup import RollupConfig, run

    master = args.spark_master
    if master is not None and not re.match(r"^(local(\[(\d+|\*)\])?|spark://[^/:]+:\d+)$", master):
        return _fail(
            f"--spark-master must be local[N], local[*] or spark://HOST:PORT, got {master!r}"
        )
    cfg = RollupConfig(
        landing=args.landing,
        warehouse=args.warehouse,
        checkpoint=args.checkpoint or args.warehouse / "_checkpoints",
        once=args.once,
        interval_s=args.interval,
        watermark=args.watermark,
        master=master,
        max_files=args.max_files,
        source=args.source,
    )
    from headwater._spark_run_cli import folders_problem

    problem = folders_problem(cfg.landing, cfg.warehouse, cfg.checkpoint)
    if problem is not None:
        return _fail(problem)
    try:
        from headwater.cloud.spark._readings import dataset_dir

        if not dataset_dir(cfg.landing).is_dir() and cfg.once:
            print(f"nothing has landed under {cfg.landing} yet: nothing to roll up")
            return 0
        run(cfg)
    except HeadwaterError as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        return 130
    return 0


def _fail(message: str) -> int:
    print(f"headwater spark rollup: {message}", file=sys.stderr)
    return 2


def _interval(text: str) -> str:
    if not _INTERVAL.match(text.strip()):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a number and a unit, e.g. '10 minutes', '30 seconds', '1 hour'"
        )
    return text.strip()
