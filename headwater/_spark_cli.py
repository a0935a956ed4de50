"""`headwater spark rollup|train|run|submit|jobs|kill|prepare`: the cloud's Spark jobs
(``run``: ``_spark_run_cli``; ``submit``, ``jobs`` and ``kill``: ``_spark_jobs_cli``).

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
        help="windowed rollups of a landed dataset into warehouse tables, exactly once",
        description="Reads a landed dataset as a stream and keeps a warehouse table per grain "
        "and group, WAREHOUSE/<grain>_<group>/date=YYYY-MM-DD/data.parquet, up to date, exactly "
        "once through crashes. Say what to roll up in a spec file (--spec, TOML: see "
        "examples/iot/rollup.toml) or with --dataset, --time, --group, --measure and --grain. "
        "Measures: count, count(col), sum(col), mean(col), min(col), max(col), stddev(col), "
        "quantile(col, q), count_if(col), rate_if(col).",
    )
    rollup.add_argument(
        "--landing",
        required=True,
        type=Path,
        metavar="ROOT",
        help="the landing root: the folder holding the datasets' folders",
    )
    rollup.add_argument(
        "--spec", type=Path, default=None, metavar="FILE", help="what to roll up (TOML)"
    )
    rollup.add_argument("--dataset", default=None, metavar="NAME", help="the dataset to roll up")
    rollup.add_argument(
        "--time", default=None, metavar="COLUMN", help="its event-time column (epoch or timestamp)"
    )
    rollup.add_argument(
        "--time-unit",
        choices=("s", "ms", "us"),
        default=None,
        help="an epoch event time's unit (default ms)",
    )
    rollup.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="NAME=COL,COL",
        help="a table per grain of rows keyed by these columns, e.g. shop=region,shop (repeat)",
    )
    rollup.add_argument(
        "--measure",
        action="append",
        default=[],
        metavar="NAME=AGG",
        help="an output column, e.g. revenue='sum(amount)' (repeat)",
    )
    rollup.add_argument(
        "--grain",
        action="append",
        default=[],
        metavar="NAME=LENGTH",
        help="a window length, e.g. hourly='1 hour' (repeat)",
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
        default=None,
        metavar="DELAY",
        help="how late a row may land and still count, e.g. '10 minutes' (the default, or "
        "the spec's); later ones are dropped and counted",
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

    from headwater._spark_jobs_cli import add_actions
    from headwater._train_cli import add_train_parser

    add_train_parser(actions)
    add_actions(actions)  # submit, jobs, kill: on a master's cluster

    from headwater._spark_run_cli import add_run_parser

    add_run_parser(actions)
    prepare = actions.add_parser(
        "prepare",
        help="write the class archive Spark's drivers start from (half their start-up CPU)",
        description="Starts Spark once, locally, and keeps the classes its driver loaded in a "
        "class archive under ~/.cache/headwater (or $XDG_CACHE_HOME/headwater): every later "
        "Spark session of this user, Java runtime and Spark version maps it and starts on about "
        "half the CPU. Takes half a minute, once; prints where it is when it is there already. "
        "HEADWATER_SPARK_CLASS_ARCHIVE=off makes sessions start without it.",
    )
    prepare.set_defaults(func=_cmd_prepare)


def _cmd_prepare(args: argparse.Namespace) -> int:
    from headwater.cloud.spark._session import prepare_archive

    try:
        path, wrote = prepare_archive()
    except HeadwaterError as e:
        print(f"headwater spark prepare: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the JVM did not start
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"headwater spark prepare: could not start Spark: {first}", file=sys.stderr)
        return 1
    size = path.stat().st_size / 1e6
    if wrote:
        print(f"wrote {path} ({size:.0f} MB): Spark's drivers start from it")
    else:
        print(f"{path} ({size:.0f} MB) is there already: Spark's drivers start from it")
    return 0


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
    try:
        spec = _spec(args)
    except HeadwaterError as e:
        return _fail(str(e))
    cfg = RollupConfig(
        spec=spec,
        landing=args.landing,
        warehouse=args.warehouse,
        checkpoint=args.checkpoint or args.warehouse / "_checkpoints",
        once=args.once,
        interval_s=args.interval,
        master=master,
        max_files=args.max_files,
        source=args.source,
    )
    from headwater._spark_run_cli import folders_problem

    problem = folders_problem(cfg.landing, cfg.warehouse, cfg.checkpoint)
    if problem is not None:
        return _fail(problem)
    try:
        run(cfg)
    except HeadwaterError as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        return 130
    return 0


def _spec(args: argparse.Namespace) -> Any:
    """The rollup spec of ``--spec`` or of the options (the options override the file's)."""
    from headwater.cloud.spark._rollup_spec import build, load

    flags = {
        "dataset": args.dataset,
        "time": args.time,
        "time_unit": args.time_unit,
        "watermark": args.watermark,
        "groups": _pairs(args.group, "--group", lambda v: [c.strip() for c in v.split(",")]),
        "measures": _pairs(args.measure, "--measure", str),
        "grains": _pairs(args.grain, "--grain", str),
    }
    given = {k: v for k, v in flags.items() if v}
    if args.spec is None:
        if not given:
            raise HeadwaterError(
                "say what to roll up: --spec FILE (e.g. examples/iot/rollup.toml), or "
                "--dataset, --time, --group, --measure and --grain"
            )
        return build(given, "the options")
    import dataclasses

    spec = load(args.spec)
    if given:
        doc = {
            **dataclasses.asdict(spec),
            "measures": {m.name: _measure_text(m) for m in spec.measures},
            "groups": {k: list(v) for k, v in spec.groups.items()},
            **given,
        }
        return build(doc, f"--spec {args.spec} with the options")
    return spec


def _measure_text(m: Any) -> str:
    if m.column is None:
        return str(m.fn)
    return f"{m.fn}({m.column}{f', {m.q}' if m.q is not None else ''})"


def _pairs(items: list[str], option: str, value: Any) -> dict[str, Any]:
    out = {}
    for item in items:
        name, eq, text = item.partition("=")
        if not eq or not name.strip() or not text.strip():
            raise HeadwaterError(
                f"{option} {item!r}: write NAME=VALUE, e.g. {option} {_EXAMPLE[option]}"
            )
        out[name.strip()] = value(text.strip())
    return out


_EXAMPLE = {
    "--group": "shop=region,shop",
    "--measure": "revenue='sum(amount)'",
    "--grain": "hourly='1 hour'",
}


def _fail(message: str) -> int:
    print(f"headwater spark rollup: {message}", file=sys.stderr)
    return 2


def _interval(text: str) -> str:
    if not _INTERVAL.match(text.strip()):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a number and a unit, e.g. '10 minutes', '30 seconds', '1 hour'"
        )
    return text.strip()
