"""`headwater spark run JOB.py`: a user's Spark job run here, in this process, by its driver.

    headwater spark run daily.py --landing DIR --warehouse DIR [--param day=2026-11-28]
    headwater spark run sums.py --landing DIR --warehouse DIR --continuous   # until Ctrl-C
    headwater spark run train.py --landing DIR --warehouse DIR --master URL --token-file F

With ``--master URL`` and an admin token, the job may register the models it trains
(``ctx.register``); the token stays in this process. Only ``--master`` hands a job the
token: ``$HEADWATER_MASTER`` alone does not.

The driver (``cloud/spark/_driver.py``) is the one a worker runs for a submitted
job; here it runs in the foreground with its status in CHECKPOINT/_driver/status.json.
Bad arguments are one line and exit status 2, a job file that cannot be run one line
and exit status 3 (never a traceback), a job that fails exit status 1 with its error;
at the end, a line of what the last run did.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater._master_client import add_client_options, given_token
from headwater.common._exceptions import HeadwaterError

if TYPE_CHECKING:
    from headwater._registry_client import Registry

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]{0,63}$")


def add_run_parser(sub: Any) -> None:
    """The ``run`` subcommand, under ``headwater spark``'s subparsers ``sub``."""
    p = sub.add_parser(
        "run",
        help="run a Spark job file (run(spark, ctx)) here: once, every DURATION or continuously",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("job", type=Path, metavar="JOB", help="a .py file defining run(spark, ctx)")
    p.add_argument("--landing", required=True, type=Path, metavar="DIR", help="the landing root")
    p.add_argument(
        "--warehouse", required=True, type=Path, metavar="DIR", help="where the tables go"
    )
    p.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        metavar="DIR",
        help="the job's checkpoints (default: WAREHOUSE/_checkpoints/spark-jobs/NAME)",
    )
    p.add_argument("--name", default=None, help="the job's name (default: the file's stem)")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter for the job (ctx.params), repeatable",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--every", type=duration, default=None, metavar="DURATION", help="e.g. 30s, 10m, 1h"
    )
    mode.add_argument(
        "--continuous", action="store_true", help="keep the job's streaming queries running"
    )
    p.add_argument(
        "--interval",
        type=float,
        default=5.0,
        metavar="S",
        help="--continuous: seconds between micro-batches (default 5)",
    )
    p.add_argument(
        "--spark-master",
        default=None,
        metavar="URL",
        help="spark://HOST:PORT for a standalone cluster (default: local[*], embedded)",
    )
    add_client_options(
        p,
        "a master whose model registry the job may register with (ctx.register; an "
        "admin token); none by default, whatever $HEADWATER_MASTER says",
    )
    p.set_defaults(func=_cmd_run)


def duration(text: str) -> float:
    """``30s``, ``10m``, ``1h``, ``1d`` as seconds."""
    m = _DURATION.match(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a duration such as 30s, 10m or 1h")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _cmd_run(args: argparse.Namespace) -> int:
    from headwater.cloud.spark._driver import Driver
    from headwater.cloud.spark._driver_config import DriverConfig, param

    job: Path = args.job
    name = args.name if args.name is not None else re.sub(r"[^\w.-]", "-", job.stem)
    if not _NAME.match(name):
        raise HeadwaterError(f"--name {name!r}: 1-64 letters, digits, '_', '-', '.'")
    params = {}
    for text in args.param:
        try:
            key, value = param(text)
        except argparse.ArgumentTypeError as e:
            raise HeadwaterError(f"--param {e}") from None
        params[key] = value
    if not args.landing.is_dir():
        raise HeadwaterError(f"--landing {args.landing}: no such folder")
    if not args.interval > 0:
        raise HeadwaterError(f"--interval {args.interval}: a number of seconds above 0")
    master = args.spark_master
    if master is not None and not re.match(r"^(local(\[(\d+|\*)\])?|spark://[^/:]+:\d+)$", master):
        raise HeadwaterError(
            f"--spark-master must be local[N], local[*] or spark://HOST:PORT, got {master!r}"
        )
    checkpoint = args.checkpoint or args.warehouse / "_checkpoints" / "spark-jobs" / name
    problem = folders_problem(args.landing, args.warehouse, checkpoint)
    if problem is not None:
        raise HeadwaterError(problem)
    registry = _registry(args)
    cfg = DriverConfig(
        job=job,
        name=name,
        landing=args.landing,
        warehouse=args.warehouse,
        checkpoint=checkpoint,
        workdir=checkpoint / "_driver",
        params=params,
        every_s=args.every,
        continuous=args.continuous,
        interval_s=args.interval,
        master=master,
        registry=registry,
    )
    driver = Driver(cfg)
    code = driver.main()
    run = (driver.status.doc if driver.status else {}).get("last_run") or {}
    if code == 0 and run.get("ended"):
        print(
            f"{name}: {run['rows_read']} rows read, {run['rows_written']} rows written "
            f"in {run['ended'] - run['started']:.1f} s"
        )
    sys.stdout.flush()
    return code


def _registry(args: argparse.Namespace) -> Registry | None:
    """The registry the job may register with: ``--master`` and a token, checked before
    Spark starts; None without ``--master`` (an exported $HEADWATER_MASTER with
    $HEADWATER_TOKEN must not hand every job an admin token)."""
    import os

    from headwater._registry_client import Registry

    url = args.url
    if not url:
        return None
    token = given_token(args)
    if not token:
        raise HeadwaterError(
            f"--master {url}: registering models needs an admin token: --token TOKEN, "
            "HEADWATER_TOKEN=TOKEN or --token-file FILE"
        )
    cacert = args.cacert or os.environ.get("HEADWATER_CACERT")
    return Registry(url.rstrip("/"), token, cacert)


def folders_problem(landing: Path, warehouse: Path, checkpoint: Path) -> str | None:
    """Why a Spark job's folders cannot be used, or None: each must be a folder (or not
    exist yet), and the warehouse and the landing zone must not hold one another (the
    job's tables would read as landed datasets, or the landing as warehouse tables)."""
    for option, folder in (("--warehouse", warehouse), ("--checkpoint", checkpoint)):
        if folder.exists() and not folder.is_dir():
            return f"{option} {folder} is a file: give a folder (it is made if missing)"
    land, ware = landing.resolve(), warehouse.resolve()
    if land == ware or land in ware.parents or ware in land.parents:
        return (
            f"--warehouse {warehouse} and --landing {landing} overlap: give the warehouse "
            "a folder of its own, outside the landing zone"
        )
    return None
