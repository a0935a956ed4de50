"""`headwater spark train`: the IoT example's anomaly training, run as a command: fit the model
on the landed readings, print its figures, write the artifact and/or register it with the
master's model registry.

    headwater spark train --landing $IOT_OUT/landing --out iot-anomaly.json
    headwater spark train --landing DIR --master URL --token TOKEN   # admin: registers it

The training is the example's own code, examples/iot/anomaly_train.py (shipped as
headwater/examples/iot/): this command loads that file by its path and does what the
platform does around it (the platform serves any topology; the IoT example is one user
of it). The arguments are checked before Spark starts; a landing with too little
history is a clear message and exit 2. Its progress goes to stderr, a line as each
stage starts and ends (starting Spark, reading the landing, fitting, evaluating,
exporting, registering) with its rows and time, the time in all and an estimate of
what is left, and every 15 s while a stage runs; the figures go to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from headwater._master_client import Client, add_client_options
from headwater._registry_client import Registry
from headwater.common._exceptions import HeadwaterError

# the training this command runs: the IoT example's (headwater/examples links to examples/)
JOB = Path(__file__).resolve().parent / "examples" / "iot" / "anomaly_train.py"
# what the command calls in it
JOB_NAMES = (
    "DATASET",
    "DEFAULT_LABELS",
    "MODEL",
    "STAGES",
    "landed",
    "load_labels",
    "registry_meta",
    "train",
)
DEFAULT_NAME = "iot-anomaly"  # the job's MODEL, for the help (the parser loads no file)
DEFAULT_LABELS = "headwater._demo.sensors:injected"  # the job's DEFAULT_LABELS, likewise
# the command's own stages, around ``train``'s (its progress: lines on stderr)
STARTING, EXPORTING, REGISTERING = "starting Spark", "exporting", "registering"


def add_train_parser(sub: Any) -> None:
    """The ``train`` subcommand, under ``headwater spark``'s subparsers ``sub``."""
    p = sub.add_parser(
        "train",
        help="fit the IoT example's anomaly model on the landed readings (Spark MLlib) and "
        "export it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--landing", required=True, metavar="DIR", help="the landing zone's root")
    p.add_argument("--name", default=None, help=f"the model's name (default: {DEFAULT_NAME})")
    p.add_argument("--out", default=None, metavar="FILE", help="write the artifact there")
    p.add_argument(
        "--holdout",
        type=float,
        default=0.25,
        metavar="FRACTION",
        help="the latest fraction of each sensor's event time held out to evaluate (default: 0.25)",
    )
    p.add_argument(
        "--labels",
        default=None,
        metavar="MODULE:FUNCTION",
        help="the truth per reading: a function taking some of site, sensor, seq, ts, value "
        "(by name) and returning whether it is an anomaly (default: the example's rule, "
        f"{DEFAULT_LABELS})",
    )
    p.add_argument(
        "--spark-master",
        default=None,
        metavar="URL",
        help="spark://HOST:PORT for a standalone cluster (default: local[*], embedded)",
    )
    add_client_options(
        p, "register the model with this master (admin token); default: $HEADWATER_MASTER"
    )
    p.set_defaults(func=_cmd_train)


def _cmd_train(args: argparse.Namespace) -> int:
    from headwater.cloud.spark import session
    from headwater.cloud.spark._datasets import Landing
    from headwater.cloud.spark._job_file import load_job_file
    from headwater.cloud.spark._progress import Progress, spark_tasks
    from headwater.cloud.spark._session import small_job_conf
    from headwater.common.models import NAME, dump_model, sha256

    job = load_job_file(JOB, JOB_NAMES)
    name = args.name if args.name is not None else job.MODEL
    register = bool(args.url or os.environ.get("HEADWATER_MASTER"))
    if not args.out and not register:
        raise HeadwaterError("give --out FILE, --master URL (or HEADWATER_MASTER), or both")
    if not NAME.fullmatch(name):
        raise HeadwaterError(
            f"--name {name!r}: 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if not 0.0 < args.holdout < 1.0:
        raise HeadwaterError(f"--holdout {args.holdout}: a fraction strictly between 0 and 1")
    out = Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise HeadwaterError(f"--out {args.out!r}: no folder {str(out.parent)!r}")
    client = Client.from_args(args) if register else None
    if client is not None and not client.token:
        raise HeadwaterError(
            "registering a model needs an admin token: --token TOKEN, HEADWATER_TOKEN=TOKEN "
            "or --token-file FILE"
        )
    labels = job.load_labels(args.labels if args.labels is not None else job.DEFAULT_LABELS)
    landing = Path(args.landing)
    dataset = job.landed(landing)  # a clear message before Spark starts

    stages = [(STARTING, 0.2), *job.STAGES, (EXPORTING, 0.0)]
    progress = Progress([*stages, (REGISTERING, 0.02)] if client else stages, _progress_line)
    try:
        from pyspark.sql import SparkSession

        ours = SparkSession.getActiveSession() is None  # else a caller's (a test's): leave it
    except ImportError:
        ours = True  # session() says what to install
    with progress.stage(STARTING) as stage:
        spark = session(
            "headwater-train",
            args.spark_master,
            small_job_conf(dataset, spark_master=args.spark_master),
        )
        stage.note = f"(Spark {spark.version}, {spark.sparkContext.master})"
    progress.detail = spark_tasks(spark)
    if ours:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        ready = progress.elapsed()
        landed = Landing(landing).read(spark, job.DATASET)
        doc = job.train(
            spark, landed, name=name, holdout=args.holdout, labels=labels, progress=progress
        )
        done = progress.elapsed()
    finally:
        progress.detail = None
        if ours:
            spark.stop()
    with progress.stage(EXPORTING) as stage:
        data = dump_model(doc)
        if out is not None:
            tmp = out.with_name(f".{out.name}.tmp")
            tmp.write_bytes(data)
            tmp.replace(out)
        stage.note = f"({len(data)} bytes{f' to {out}' if out is not None else ''})"
    _print_figures(doc, done - ready, ready)
    print(f"artifact: {len(data)} bytes, sha256 {sha256(data)}")
    if out is not None:
        print(f"wrote {out}")
    if client is not None:
        with progress.stage(REGISTERING):  # as the job registers (ctx.register)
            registry = Registry(client.url, client.token or "", client.cacert)
            made = registry.register(data, name, meta=job.registry_meta(doc))
        print(f"registered {made['name']} version {made['version']} (sha256 {made['sha256']})")
    sys.stdout.flush()
    return 0


def _progress_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _print_figures(doc: dict[str, Any], seconds: float, startup: float) -> None:
    trained, ev = doc["trained"], doc["evaluation"]
    print(
        f"trained {doc['name']} ({doc['kind']}) on {trained['rows']} readings of "
        f"{trained['sensors']} sensors, ts {trained['from_ts']}..{trained['to_ts']}, "
        f"in {seconds:.1f} s (Spark start {startup:.1f} s)"
    )
    print(
        f"held out {ev['test_rows']} readings (the latest {ev['holdout']:g} of each sensor's "
        f"event time); truth: {ev['labels']}"
    )
    head = ("rows", 6), ("precision", 9), ("recall", 7), ("f1", 6), ("tp", 5), ("fp", 5)
    print(f"{'':10} " + " ".join(f"{h:>{w}}" for h, w in head) + f" {'fn':>5}")
    for who, label in (("model", "model"), ("handset", "hand-set")):
        f = ev[who]
        print(
            f"{label:10} {f['rows']:>6} {_ratio(f['precision']):>9} {_ratio(f['recall']):>7} "
            f"{_ratio(f['f1']):>6} {f['tp']:>5} {f['fp']:>5} {f['fn']:>5}"
        )
    sys.stdout.flush()


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
