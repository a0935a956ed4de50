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
import traceback

from ..plan import add_domain_arguments, load_topology, plan_from_json, restrict, task_ids
from ..wire._control import ExceptionReport, control_frame
from ..wire._frame import length_prefix
from ._instance import Instance

log = logging.getLogger("headwater.instance")
TOPOLOGY_FILE_ENV = "HEADWATER_TOPOLOGY_FILE"
"""Set in an instance process: the topology file it runs (inside its revision's package)."""
LABELS_ENV = "HEADWATER_LABELS"
"""Set in an instance process: the agent's labels as JSON (``{}`` outside an edge domain)."""


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
    stop = {"flag": False}
    inst: Instance | None = None

    def on_term(signum: int, frame: object) -> None:
        stop["flag"] = True
        if inst is not None:
            inst.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(args.socket)
    comp = "?"  # until the topology is loaded
    try:
        topology = load_topology(args.topology_file, args.topology, args.domain, args.labels)
        plan = None
        if args.plan_file:
            with open(args.plan_file) as f:
                plan = plan_from_json(f.read())
            topology = restrict(topology, plan)
        ids = plan.ids() if plan is not None else task_ids(topology)
        comp = next((c for c, ts in ids.items() if args.task in ts), "?")
        inst = Instance(topology, args.task, sock, plan)
        if stop["flag"]:
            return 0
        inst.run()
    except Exception as exc:
        tb = traceback.format_exc()
        log.error("task %d (%s) failed: user code raised\n%s", args.task, comp, tb)
        report = ExceptionReport(args.task, comp, f"{type(exc).__name__}: {exc}", tb)
        frame = control_frame(report, src=args.task)
        if inst is not None and inst.gateway.is_alive():
            inst.metrics_out.append(frame)
            inst.gateway.stop()
            inst.gateway.join(2.0)
        else:
            sock.setblocking(True)
            sock.sendall(length_prefix(frame) + frame)
        return 1
    finally:
        if inst is not None:
            inst.gateway.stop()
            inst.gateway.join(2.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
