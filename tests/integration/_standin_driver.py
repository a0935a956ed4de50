"""A stand-in for the Spark job driver (``headwater.cloud.spark.driver``), for the tests of
a worker's supervision of drivers only: the worker runs it through its documented test hook
``HEADWATER_SPARK_DRIVER`` (common/node/_spark_jobs.py). It takes the driver's options,
beats, writes ``status.json`` as the driver does, and ends as its ``--param exit=N`` says
(0: a run that succeeded; else a failed run, whose error is ``--param error=TEXT`` if given),
after printing its arguments to its log. A job that is not a once job and succeeded waits,
beating, until SIGTERM (then exits 0), as the driver waits for its next run.

With ``--registry-stdin`` it reads its registry as the real driver does (``read_registry``)
and, given ``--param register=NAME``, registers a JSON artifact as NAME through it with
metadata ``{"by": JOB}`` (a failure is its run's error), then tries a listing of the jobs
with the same token and prints the answer (a job's token may not list)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser()
    for flag in ("--job", "--name", "--landing", "--warehouse", "--checkpoint", "--workdir"):
        p.add_argument(flag, required=True)
    p.add_argument("--param", action="append", default=[])
    p.add_argument("--every", type=float, default=None)
    p.add_argument("--continuous", action="store_true")
    p.add_argument("--spark-master", default=None)
    p.add_argument("--registry-stdin", action="store_true")
    args = p.parse_args()
    params = dict(x.split("=", 1) for x in args.param)
    code = int(params.get("exit", "0"))
    work = Path(args.workdir)
    (work / "c0.alive").touch()
    print(f"stand-in driver {args.name}: job {Path(args.job).name}, params {params}", flush=True)
    failure = params.get("error", f"RuntimeError: stand-in failure {code}")
    if args.registry_stdin and "register" in params:
        try:
            _register(sys.stdin.readline(), params["register"], args.name)
        except Exception as exc:
            code, failure = 1, f"{type(exc).__name__}: {exc}"
            print(failure, flush=True)
    if "HW_TEST_UID" in os.environ:  # the isolation test: who runs it
        print(f"uid {os.getuid()}", flush=True)
    mode = "continuous" if args.continuous else "every" if args.every else "once"
    now = time.time()
    status = {
        "name": args.name,
        "state": "succeeded" if code == 0 else "failed",
        "mode": mode,
        "pid": os.getpid(),
        "runs": 1,
        "last_run": {
            "started": now,
            "ended": now,
            "ok": code == 0,
            "rows_read": 7,
            "rows_written": 3 if code == 0 else 0,
            "error": "" if code == 0 else failure,
        },
        "queries": [],
        "updated": now,
    }
    _write(work, status)
    if code == 0 and mode != "once":
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        _write(work, {**status, "state": "waiting"})
        while not stop.wait(0.5):  # beats until SIGTERM, which ends the wait at once
            (work / "c0.alive").touch()
    return code


def _register(line: str, name: str, job: str) -> None:
    from headwater._master_client import Client
    from headwater.cloud.spark._driver_config import read_registry
    from headwater.common._exceptions import HeadwaterError
    from tests._artifacts import artifact

    registry = read_registry(line)
    print(f"registry {registry!r}", flush=True)
    record = registry.register(artifact(name=name), name, meta={"by": job})
    print(f"registered {record['name']} version {record['version']}", flush=True)
    try:
        Client(registry.url, registry.token).call("GET", "/api/v1/spark/jobs")
        print("listed the jobs", flush=True)
    except HeadwaterError as exc:
        print(f"listing refused: {exc}", flush=True)


def _write(work: Path, status: dict[str, object]) -> None:
    tmp = work / "status.tmp"
    tmp.write_text(json.dumps(status))
    tmp.replace(work / "status.json")


if __name__ == "__main__":
    sys.exit(main())
