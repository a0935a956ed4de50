"""`headwater logs`: the logs of a topology's processes, of a local run or on a master.

A local run (``headwater run``, on this machine) is read from its work directory, where
its processes write: ``headwater logs NAME`` prints the last lines of its topology
master's log, then each container's and its instances' (``tmaster.log``,
``container-C.log``, ``task-T.log``); ``NAME/C`` one container's and its instances';
``NAME/task-T`` instance T's (each container's log says which tasks connected to it);
``NAME/tmaster`` the topology master's. ``--follow`` goes on printing the lines
they append until the run ends (or Ctrl-C). A run that ended is read the same way while
its logs are kept (``headwater run`` keeps them unless ``--no-keep-logs``): each run
records its work directory in ``STATE/logs/NAME.json`` (``$HEADWATER_STATE_DIR``, by
default ``~/.local/state/headwater``), the latest run of a name replacing the last's.

On a master (``--master URL``, or ``$HEADWATER_MASTER``), ``headwater logs
TOPOLOGY[/CONTAINER] [--tail N]`` prints the last lines of the
logs of a topology's containers (all of them, or one). Under the Docker scheduler the
master reads them through the Docker API: the worker's Docker log, then the container's
own log file. Under the worker scheduler it asks the worker that runs the container: the
container's own log file, then each of its instances' log files (``task-T.log``).
``headwater logs NODE`` does the same for a Docker-scheduled node id (a worker the master
did not start keeps its own log where it was started). It needs an operator's token: a
log holds what user code prints, which a viewer's dashboards do not show. ``headwater logs
JOB`` prints a Spark job's driver log (``headwater spark submit``), from its worker.

A name both a local run and ``$HEADWATER_MASTER``'s cluster have is the cluster's (a line
on stderr says so); ``--local`` reads the local run's. A name the master does not have
(or a master that does not answer) is the local run's, and stderr says that too.
Without ``$HEADWATER_MASTER`` and ``--master``, only local runs are read.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from headwater._argtypes import whole
from headwater._master_client import Client, add_client_options
from headwater._spark_jobs_cli import job_names, print_job_log
from headwater.common._exceptions import HeadwaterError

if TYPE_CHECKING:
    from headwater.cloud.local._logs import RunLogs

MAX_TAIL = 10_000
MAX_TAIL_BYTES = 16 << 20  # read back at most this much for the last lines of a log
POLL_S = 0.2
_TASK = re.compile(r"^task-(\d+)$")


def add_parsers(sub: Any) -> None:
    logs = sub.add_parser(
        "logs",
        help="print the last lines of a topology's logs: its containers' and instances' "
        "(a local run's, or on a master), or a Docker-scheduled node's",
        description=(__doc__ or "").replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    logs.add_argument(
        "target",
        metavar="TOPOLOGY[/CONTAINER|/task-T|/tmaster]|NODE",
        help="a topology (all its logs), one of its containers (NAME/0), of a local run "
        "also one instance (NAME/task-3) or its topology master (NAME/tmaster); on a "
        "master, a node id",
    )
    logs.add_argument(
        "--tail",
        type=whole(1, MAX_TAIL),
        default=200,
        metavar="N",
        help=f"the last N lines of each log (1 to {MAX_TAIL}; default 200)",
    )
    logs.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="a local run's: then keep printing the lines its logs append, until it ends "
        "or Ctrl-C (default: print the last lines and return)",
    )
    logs.add_argument(
        "--local",
        action="store_true",
        help="read the local run's logs (`headwater run` on this machine) even when "
        "$HEADWATER_MASTER's cluster has a topology of that name too",
    )
    add_client_options(
        logs,
        "the master's API URL (default: $HEADWATER_MASTER, whose topology of that name is "
        "preferred to a local run's; without either, the local run's logs)",
    )
    logs.set_defaults(func=_cmd_logs)


def _cmd_logs(args: argparse.Namespace) -> int:
    from headwater.cloud.local import state_dir
    from headwater.cloud.local._logs import recorded_runs

    runs = recorded_runs(state_dir())
    name = args.target.partition("/")[0]
    if args.local and args.url is not None:
        raise HeadwaterError("--local reads a local run's logs, --master URL a master's: give one")
    env = os.environ.get("HEADWATER_MASTER")
    if args.local or (args.url is None and not env):
        return _local(args, runs)
    local = name in runs
    if args.url is None and local:  # a local run of that name: the cluster's, if it has one
        absent = _not_on_master(args, name)
        if absent is not None:
            _say(f"{absent}; logs of the local run of that name (`headwater run`)")
            return _local(args, runs)
    if args.follow:
        raise HeadwaterError(
            "--follow reads a local run's logs (`headwater run`); a master's are read with --tail N"
            + ("; --local --follow follows the local run of that name" if local else "")
        )
    if args.url is None and local:
        also = "a local run of that name also exists: --local to see it"
        _say(f"logs of the cluster's {name} ({also})")
    return _cluster(args, local)


def _say(line: str) -> None:
    print(f"headwater logs: {line}", file=sys.stderr, flush=True)


def _not_on_master(args: argparse.Namespace, name: str) -> str | None:
    """None if the master has a topology (or, for a bare name, a node) ``name``; otherwise
    why not (it has none, or it did not answer)."""
    client = Client.from_args(args)
    try:
        if name in {t.get("name") for t in client.call("GET", "/api/v1/topologies")}:
            return None
        if "/" not in args.target and name in {
            n.get("id") for n in client.call("GET", "/api/v1/nodes")
        }:
            return None
        if "/" not in args.target and name in job_names(client):
            return None
    except HeadwaterError as exc:
        return f"the master did not answer ({exc})"
    return f"the master at {client.url} has no topology named {name!r}"


# -- a local run's ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Log:
    header: str
    path: Path


def _local(args: argparse.Namespace, runs: dict[str, RunLogs]) -> int:
    name, slash, part = args.target.partition("/")
    run = runs.get(name)
    if run is None:
        raise HeadwaterError(_unknown(name, runs))
    logs = _select(run, part if slash else None)
    if not run.workdir.is_dir():
        raise HeadwaterError(
            f"the logs of {name!r} were in {run.workdir}, which is gone; "
            "run it again with `headwater run FILE` to make new ones"
        )
    if not run.running:
        print(
            f"headwater logs: {name!r} {_state(run)}; its logs are kept in {run.workdir}",
            file=sys.stderr,
        )
    offsets = _print_tails(logs, args.tail)
    if not args.follow:
        return 0
    try:
        _follow(run, logs, offsets)
    except KeyboardInterrupt:  # the way to end --follow early: not an error
        return 0
    return 0


def _unknown(name: str, runs: dict[str, RunLogs]) -> str:
    where = "--master URL or HEADWATER_MASTER=URL for a master's topology"
    if not runs:
        return (
            f"no local run named {name!r}: no run of `headwater run` on this machine has "
            f"logs kept; start one with `headwater run FILE`, or name a master: {where}"
        )
    known = ", ".join(f"{n} ({_state(r)})" for n, r in sorted(runs.items()))
    return f"no local run named {name!r}; the local runs: {known}; or name a master: {where}"


def _state(run: RunLogs) -> str:
    if run.running:
        return "running"
    if run.ended is None:
        return "ended (its launcher was killed)"
    return "ended " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.ended))


def _select(run: RunLogs, part: str | None) -> list[_Log]:
    """The logs ``NAME[/PART]`` names, in the order they print."""
    name = run.topology

    def container(c: int) -> list[_Log]:
        logs = [_Log(f"{name}/{c}: container log", run.container_log(c))]
        for t in sorted(run.tasks[c]):
            path = run.task_log(t)
            logs.append(_Log(f"{name}/{c}: instance log {path.name}", path))
        return logs

    tmaster = _Log(f"{name}: topology master log", run.tmaster_log())
    if part is None:
        return [tmaster] + [log for c in sorted(run.tasks) for log in container(c)]
    if part == "tmaster":
        return [tmaster]
    if part.isdigit() and part.isascii():
        if int(part) not in run.tasks:
            raise HeadwaterError(
                f"{name!r} has no container {part}: its containers are "
                f"{', '.join(str(c) for c in sorted(run.tasks))}"
            )
        return container(int(part))
    task = _TASK.match(part)
    if task and task.group(1).isascii():
        t = int(task.group(1))
        c = run.container_of(t)
        if c is None:
            every = sorted(pair for tasks in run.tasks.values() for pair in tasks.items())
            known = ", ".join(f"task-{n} ({comp})" for n, comp in every)
            raise HeadwaterError(f"{name!r} has no task {t}: its instances are {known}")
        path = run.task_log(t)
        return [_Log(f"{name}/{c}: instance log {path.name}", path)]
    raise HeadwaterError(
        f"{name + '/' + part!r}: name a container ({name}/0), an instance ({name}/task-1) or "
        f"the topology master ({name}/tmaster) after the topology's name"
    )


def _print_tails(logs: list[_Log], n: int) -> dict[Path, int]:
    """Print each log's header and its last ``n`` lines; where each was read up to."""
    offsets: dict[Path, int] = {}
    out = sys.stdout
    for log in logs:
        data, end = _tail(log.path, n)
        offsets[log.path] = end
        if end < 0:  # not written yet (a run still starting): followed if it appears
            continue
        out.write(f"==> {log.header} ({log.path}) <==\n")
        out.write(_text(data))
    out.flush()
    return offsets


def _tail(path: Path, n: int) -> tuple[bytes, int]:
    """The last ``n`` whole lines of ``path`` and where they end (-1: no such file)."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return b"", -1
    except OSError as exc:
        raise HeadwaterError(f"{path}: {exc.strerror or exc}") from None
    with f:
        size = f.seek(0, os.SEEK_END)
        pos, chunks, newlines = size, [], 0
        while pos > 0 and newlines <= n and size - pos < MAX_TAIL_BYTES:
            step = min(pos, 64 << 10)
            pos -= step
            f.seek(pos)
            chunks.append(f.read(step))
            newlines += chunks[-1].count(b"\n")
    data = b"".join(reversed(chunks))
    if pos > 0 and newlines <= n:  # lines longer than MAX_TAIL_BYTES: from the next whole one
        data = data[data.find(b"\n") + 1 :]
    end = size
    if not data.endswith(b"\n"):  # a line being written: followed once it ends
        cut = data.rfind(b"\n") + 1
        end -= len(data) - cut
        data = data[:cut]
    lines = data.splitlines(keepends=True)
    return b"".join(lines[-n:]), end


def _follow(run: RunLogs, logs: list[_Log], offsets: dict[Path, int]) -> None:
    """Print the lines the logs append (a header when the log changes) until the run ends."""
    from headwater.cloud.local import state_dir
    from headwater.cloud.local._logs import recorded_runs

    out = sys.stdout
    last: Path | None = logs[-1].path if logs else None
    for log in reversed(logs):  # the last header printed
        if offsets[log.path] >= 0:
            last = log.path
            break
    over = False
    while True:
        now = recorded_runs(state_dir()).get(run.topology)
        over = now is None or now.started != run.started or not now.running
        for log in logs:
            data, offsets[log.path] = _appended(log.path, offsets[log.path], whole=over)
            if not data:
                continue
            if last != log.path:
                out.write(f"\n==> {log.header} ({log.path}) <==\n")
                last = log.path
            out.write(_text(data))
        out.flush()
        if over:
            return
        time.sleep(POLL_S)


def _appended(path: Path, offset: int, whole: bool) -> tuple[bytes, int]:
    """What ``path`` holds past ``offset``: its whole lines (and a last, unended one if
    ``whole``), and the offset after them; a file cut shorter is read from its start."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = 0 if size < offset else max(offset, 0)
            f.seek(start)
            data = f.read()
    except OSError:  # not there yet, or deleted with the run's work directory
        return b"", offset
    if not whole:
        data = data[: data.rfind(b"\n") + 1]
    if whole and data and not data.endswith(b"\n"):
        data += b"\n"
        return data, start + len(data) - 1
    return data, start + len(data)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


# -- on a master ----------------------------------------------------------------------------
def _cluster(args: argparse.Namespace, local: bool = False) -> int:
    """The master's logs of ``args.target`` (``local``: a local run has that name too)."""
    target, tail = args.target, args.tail
    name, slash, number = target.partition("/")
    if slash and (not name or not number.isdigit() or not number.isascii()):
        raise HeadwaterError(
            f"{target!r}: name a topology and a container number, as in wc/0"
            + (f"; --local reads the local run's {target}" if local else "")
        )
    client = Client.from_args(args)
    if slash:
        path = f"/api/v1/topologies/{quote(name, safe='')}/containers/{number}/logs"
        views = [client.call("GET", f"{path}?tail={tail}")]
    else:
        topologies = {t.get("name") for t in client.call("GET", "/api/v1/topologies")}
        nodes = {n.get("id") for n in client.call("GET", "/api/v1/nodes")}
        if target in topologies:
            views = client.call(
                "GET", f"/api/v1/topologies/{quote(target, safe='')}/logs?tail={tail}"
            )
        elif target in nodes:
            views = [client.call("GET", f"/api/v1/nodes/{quote(target, safe='')}/logs?tail={tail}")]
        elif target in (jobs := job_names(client)):
            print_job_log(client, target, tail)
            return 0
        else:
            known = ", ".join(sorted(str(t) for t in topologies)) or "none"
            also = f"; Spark jobs: {', '.join(sorted(jobs))}" if jobs else ""
            raise HeadwaterError(
                f"no topology, node or Spark job named {target!r} (topologies: {known}{also})"
            )
    for view in views:
        _print(view)
    return 0


def _print(view: dict[str, Any]) -> None:
    out = sys.stdout
    where = f"{view['topology']}/{view['container']}"
    if "worker_log" in view:  # the Docker scheduler's
        out.write(
            f"==> {where}: worker log (Docker container {view['docker_container']}, "
            f"{view['status']}) <==\n"
        )
        out.write(_ended(view["worker_log"]))
    node = f" on node {view['node']}" if "docker_container" not in view else ""
    out.write(f"==> {where}: container log{node} ({view['container_log_path']}) <==\n")
    out.write(_ended(view["container_log"]))
    for instance in view.get("instance_logs", []):
        out.write(f"==> {where}: instance log {instance['name']} ({instance['path']}) <==\n")
        out.write(_ended(instance["text"]))
    out.flush()


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
