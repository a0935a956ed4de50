"""`headwater spark submit|jobs|kill`: Spark jobs on a master's cluster.

``headwater spark submit JOB.py`` sends a job file (``run(spark, ctx)``; or a ``.toml``
rollup spec) to the master (``POST /api/v1/spark/jobs``), which checks it in a child
process and gives it to a worker; ``--every 10m`` (or ``--schedule "every 10m"``) runs it
every ten minutes, ``--continuous`` keeps it running, the default runs it once;
``--registers NAME`` (an admin's submit) lets the job register versions of model NAME
(``ctx.register``) with a token of its own that may do nothing else.
``headwater spark jobs`` lists the jobs (``--json`` the raw answer), ``headwater spark kill
NAME`` stops one, and ``headwater logs NAME`` prints a job's driver log. Bad arguments are
one line and exit status 2, as is every refusal of the master's.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from headwater._master_client import Client, add_client_options
from headwater.common._exceptions import HeadwaterError

MASTER_HELP = "the master's API URL (default: $HEADWATER_MASTER)"
_EVERY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_WORDS = {"second": "s", "minute": "m", "hour": "h", "day": "d"}
_SPARK_MASTER = re.compile(r"spark://[A-Za-z0-9.-]{1,253}:[0-9]{1,5}")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}=.*", re.DOTALL)


def _every(text: str) -> float:
    m = _EVERY.fullmatch(text)
    unit = m.group(2) if m else ""
    unit = _WORDS.get(unit.removesuffix("s"), unit) if len(unit) > 1 else unit
    seconds = float(m.group(1)) * _UNITS[unit] if m and unit in _UNITS else 0
    if not 1 <= seconds <= 366 * 86400:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give an interval of 1 s to 366 d, e.g. 90s, 10m, 1h or 1d"
        )
    return seconds


def _schedule(text: str) -> float:
    word, _, interval = text.strip().partition(" ")
    if word != "every" or not interval:
        raise argparse.ArgumentTypeError(f"{text!r}: give 'every INTERVAL', e.g. 'every 10m'")
    return _every(interval)


def _spark_master(text: str) -> str:
    if not _SPARK_MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r}: give spark://HOST:PORT")
    return text


def _param(text: str) -> str:
    if not _PARAM.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE")
    return text


def add_actions(actions: Any) -> None:
    """Add ``submit``, ``jobs`` and ``kill`` to the ``spark`` command group's ``actions``."""
    submit = actions.add_parser(
        "submit",
        help="run a Spark job file on the cluster: once, every N, or continuously",
        description=(__doc__ or "").replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    submit.add_argument("file", type=Path, help="JOB.py (defines run(spark, ctx)) or SPEC.toml")
    submit.add_argument("--name", default=None, help="the job's name (default: the file's stem)")
    mode = submit.add_mutually_exclusive_group()
    mode.add_argument(
        "--every", type=_every, default=None, metavar="INTERVAL", help="run it every 90s, 10m, 1h…"
    )
    mode.add_argument(
        "--schedule",
        type=_schedule,
        default=None,
        metavar="'every INTERVAL'",
        dest="every",
        help="the same as --every, spelt 'every 10m'",
    )
    mode.add_argument("--continuous", action="store_true", help="keep it running (streaming)")
    submit.add_argument(
        "--spark-master",
        type=_spark_master,
        default=None,
        metavar="URL",
        help="spark://HOST:7077 (default: Spark embedded in local mode on the worker)",
    )
    submit.add_argument(
        "--param",
        type=_param,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter of the job (ctx.params); repeat it for more",
    )
    submit.add_argument(
        "--registers",
        action="append",
        default=[],
        metavar="MODEL",
        help="a model the job registers (ctx.register) with a token of its own that may "
        "register versions of the models named so and nothing else; repeat it for more",
    )
    submit.add_argument("--landing", default=None, metavar="DIR", help="on the workers")
    submit.add_argument("--warehouse", default=None, metavar="DIR", help="on the workers")
    add_client_options(submit, MASTER_HELP)
    submit.set_defaults(func=_cmd_submit)

    jobs = actions.add_parser("jobs", help="list the cluster's Spark jobs")
    jobs.add_argument("--json", action="store_true", help="print the raw JSON")
    add_client_options(jobs, MASTER_HELP)
    jobs.set_defaults(func=_cmd_jobs)

    kill = actions.add_parser("kill", help="stop a Spark job and remove it from the master")
    kill.add_argument("name", help="the job's name (`headwater spark jobs` lists them)")
    add_client_options(kill, MASTER_HELP)
    kill.set_defaults(func=_cmd_kill)


def _cmd_submit(args: argparse.Namespace) -> int:
    file: Path = args.file
    if file.suffix not in (".py", ".toml"):
        raise HeadwaterError(f"{str(file)!r}: a Spark job is a .py file or a .toml rollup spec")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise HeadwaterError(f"{str(file)!r}: cannot read it ({exc.strerror})") from None
    query: list[tuple[str, str]] = [("file", file.name)]
    if args.name:
        query.append(("name", args.name))
    if args.every is not None:
        query += [("mode", "every"), ("every_s", f"{args.every:g}")]
    elif args.continuous:
        query.append(("mode", "continuous"))
    if args.spark_master:
        query.append(("spark_master", args.spark_master))
    query += [("param", p) for p in args.param]
    query += [("registers", m) for m in args.registers]
    for key in ("landing", "warehouse"):
        folder = getattr(args, key)
        if folder is not None:
            if not folder.startswith("/"):
                raise HeadwaterError(f"--{key} {folder!r}: an absolute path on the workers")
            query.append((key, folder))
    job = Client.from_args(args).call("POST", f"/api/v1/spark/jobs?{urlencode(query)}", data)
    node = f", on worker {job['node']}" if job.get("node") else ", waiting for a worker"
    print(f"submitted Spark job {job['name']!r} ({job['mode']}{node})")
    if job.get("registers"):
        print(f"it may register versions of {', '.join(job['registers'])}")
    return 0


def _cmd_kill(args: argparse.Namespace) -> int:
    Client.from_args(args).call("DELETE", f"/api/v1/spark/jobs/{quote(args.name, safe='')}")
    print(f"killed Spark job {args.name!r}")
    return 0


def _cmd_jobs(args: argparse.Namespace) -> int:
    jobs = Client.from_args(args).call("GET", "/api/v1/spark/jobs")
    if args.json:
        print(json.dumps(jobs, indent=2))
        return 0
    for line in jobs_table(jobs):
        print(line)
    return 0


_COLUMNS = ("job", "state", "node", "mode", "runs", "last run", "read", "written")


def jobs_table(jobs: list[dict[str, Any]], now: float | None = None) -> list[str]:
    """The lines `headwater spark jobs` prints: a row a job, then its error or crash loop."""
    if not jobs:
        return ["no Spark jobs (headwater spark submit JOB.py runs one)"]
    now = time.time() if now is None else now
    rows = []
    for j in jobs:
        mode = f"every {j['every_s']:g}s" if j["mode"] == "every" else j["mode"]
        last = j.get("last_run") or {}
        ran = "-"
        if last.get("started"):
            ago = max(0.0, now - (last.get("ended") or last["started"]))
            ran = f"{'ok' if last.get('ok') else 'failed'} {ago:.0f}s ago"
        rows.append(
            (
                j["name"],
                j["state"],
                j["node"] or "-",
                mode,
                str(j["runs"]),
                ran,
                str(j["rows_read"]),
                str(j["rows_written"]),
            )
        )
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS)]
    out = ["  ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths, strict=True)).rstrip()]
    for j, row in zip(jobs, rows, strict=True):
        out.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
        if j.get("crash_loop"):
            out.append(f"    crash loop: {j['crash_loop']}")
        if j.get("last_error"):
            out.append(f"    error: {j['last_error'].splitlines()[0][:300]}")
    return out


def job_names(client: Client) -> set[str]:
    """The names of the master's Spark jobs (``headwater logs`` looks there too)."""
    return {str(j.get("name")) for j in client.call("GET", "/api/v1/spark/jobs")}


def print_job_log(client: Client, name: str, tail: int) -> None:
    """Print the driver log of Spark job ``name``, as its worker has it."""
    view = client.call("GET", f"/api/v1/spark/jobs/{quote(name, safe='')}/logs?tail={tail}")
    out = sys.stdout
    out.write(
        f"==> Spark job {name}: driver log on node {view['node']} ({view['driver_log_path']}) <==\n"
    )
    text = view["driver_log"]
    out.write(text if not text or text.endswith("\n") else text + "\n")
    out.flush()
