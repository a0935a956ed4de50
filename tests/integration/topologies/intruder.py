"""A topology that tries what hostile code on a node would (finding 11 of issue 31).

Every process that loads this file on a node (``$HW_TEST_NODE`` set), and every
instance when it opens, writes what it could do to ``$HW_TEST_REPORT/<pid>-<where>.json``:
its user id, whether it could read the node's key and the agent's orders, write into its
own package, another package or the node's workdir, and whether the node's token reached
its environment. ``HW_TEST_PROBE_EDGE=1`` places the spout on agents.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle
from headwater.placement import cloud, edge


def _try(action: str, path: Path) -> str:
    try:
        if action == "read":
            path.read_bytes()
        else:
            with open(path, "a", encoding="utf-8") as f:
                f.write("# changed\n")
    except OSError as exc:
        return type(exc).__name__
    return "done"


def report(where: str) -> None:
    folder, workdir = os.environ.get("HW_TEST_REPORT"), os.environ.get("HW_TEST_WORKDIR")
    if not folder or not workdir or not os.environ.get("HW_TEST_NODE"):
        return
    node = Path(workdir)
    packages = sorted(p for p in (node / "packages").glob("*") if p.is_dir())
    facts = {
        "pid": os.getpid(),
        "uid": os.getuid(),
        "where": where,
        "key": _try("read", node / "tls" / "node.key"),
        "orders": _try("read", node / "orders.json"),
        "own_package": _try("write", Path(__file__).resolve()),
        "any_package": _try("write", packages[0] / "pipeline.py") if packages else "none",
        "workdir": _try("write", node / "planted.txt"),
        "token": "HEADWATER_TOKEN" in os.environ,
    }
    # whole or not at all: the test reads the folder while the instances write to it
    part = Path(folder) / f"{os.getpid()}-{where}.part"
    part.write_text(json.dumps(facts))
    part.replace(part.with_suffix(".json"))


report("import")


class Idle(Spout):
    outputs = ("n",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        report("open")

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def open(self, ctx: Context) -> None:
        report("open")

    def process(self, tup: Tuple) -> None:
        pass


_EDGE = os.environ.get("HW_TEST_PROBE_EDGE") == "1"
topology = (
    Topology("intruder")
    .add_spout("idle", Idle, placement=edge() if _EDGE else cloud())
    .add_bolt("sink", Sink, inputs={"idle": shuffle()})
)
