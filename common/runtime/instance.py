"""Entry point of an instance process: ``python -m headwater.common.runtime.instance``.

Loads the topology (and a revision's plan), connects to the container's
stmgr and runs the task (``_instance.Instance``). User code that raises
outside ``process`` ends here: the exception is logged, reported to the stmgr
(``ExceptionReport``) and the process exits with status 1, for its container
to restart it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable

from ..api import Topology
from ..plan import (
    PhysicalPlan,
    add_domain_arguments,
    load_topology,
    plan_from_json,
    restrict,
    task_ids,
)
from ..wire._control import ExceptionReport, control_frame
from ..wire._frame import length_prefix
from ._gc import tune_for_records
from ._instance import Instance

log = logging.getLogger("headwater.instance")
TOPOLOGY_FILE_ENV = "HEADWATER_TOPOLOGY_FILE"
"""Set in an instance process: the topology file it runs (inside its revision's package)."""
LABELS_ENV = "HEADWATER_LABELS"
"""Set in an instance process: the agent's labels as JSON (``{}`` outside an edge domain)."""
AGENT_ID_ENV = "HEADWATER_AGENT_ID"
"""Set in an edge container's processes (by its agent) and so in its instances: the agent's
id, by which a rollout's wave picks a model version (``_package_models.pick``)."""
TASK_PACKAGE = threading.local()
"""On a task's own thread (``_threads.InstanceThread``): ``file``, ``labels`` and ``agent`` as
the three variables above say them, which it reads first (a process's environment is shared by every
container an agent hosts, ``--footprint single``, and by every revision of one)."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="headwater-instance")
    p.add_argument("--topology-file", required=True)
    p.add_argument("--topology", default=None)
    p.add_argument("--task", type=int, required=True)
    p.add_argument("--socket", required=True)
    p.add_argument("--plan-file", default=None, help="task ids (a revised topology's plan)")
    add_domain_arguments(p)
    args = p.parse_args(argv)
    # what a component may read at open: its package's files (a model the master shipped
    # with it) and the labels that pick among them (a canary's selector)
    os.environ[TOPOLOGY_FILE_ENV] = os.path.abspath(args.topology_file)
    os.environ[LABELS_ENV] = json.dumps(args.labels, sort_keys=True)
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s %(levelname)s task={args.task} %(name)s: %(message)s",
    )
    stop = StopFlag()

    def on_term(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    def load() -> tuple[Topology, PhysicalPlan | None]:
        topology = load_topology(args.topology_file, args.topology, args.domain, args.labels)
        plan = None
        if args.plan_file:
            with open(args.plan_file) as f:
                plan = plan_from_json(f.read())
            topology = restrict(topology, plan)
        tune_for_records()  # a process of its own: what is loaded now stays
        return topology, plan

    return run_task(args.task, args.socket, load, stop)


class StopFlag:
    """Asked to stop (SIGTERM in a process; ``terminate`` on a thread): the instance ends."""

    def __init__(self) -> None:
        self.flag = False
        self.inst: Instance | None = None
        self.sock: socket.socket | None = None  # to the stmgr, once connected

    def set(self) -> None:
        self.flag = True
        if self.inst is not None:
            self.inst.stopping = True


def run_task(
    task: int,
    socket_path: str,
    load: Callable[[], tuple[Topology, PhysicalPlan | None]],
    stop: StopFlag,
) -> int:
    """Connect to the stmgr at ``socket_path`` and run ``task`` of what ``load`` gives until it
    ends: 0, or 1 when user code raised (reported to the stmgr first). An instance process
    runs it on its main thread; a container of the small footprint on a thread per task."""
    sock = stop.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    comp = "?"  # until the topology is loaded
    inst: Instance | None = None
    try:
        topology, plan = load()
        ids = plan.ids() if plan is not None else task_ids(topology)
        comp = next((c for c, ts in ids.items() if task in ts), "?")
        inst = stop.inst = Instance(topology, task, sock, plan)
        if stop.flag:
            return 0
        inst.run()
    except Exception as exc:
        tb = traceback.format_exc()
        log.error("task %d (%s) failed: user code raised\n%s", task, comp, tb)
        report = ExceptionReport(task, comp, f"{type(exc).__name__}: {exc}", tb)
        frame = control_frame(report, src=task)
        if inst is not None and inst.gateway.is_alive():
            inst.gateway.metrics_out.append(frame)
            inst.gateway.close(2.0)
        else:
            sock.setblocking(True)
            sock.sendall(length_prefix(frame) + frame)
        return 1
    finally:
        if inst is not None:  # one stopped while it loaded has a gateway that never started
            inst.gateway.close(2.0)
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
