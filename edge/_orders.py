"""An agent's orders, kept on its own disk: what to run when the master is out of reach.

The master's orders (run an edge subgraph, activate or deactivate it, switch
it to a revision) reach an agent on its attach stream. The agent writes them
to ``WORKDIR/orders.json`` (synced, replaced whole) as they come, with the
master's address, so that after a reboot it resumes its edge subgraphs from
its own disk before it reaches the master: a gateway that restarts during an
outage goes on processing, checkpointing and trimming its ingest log, and its
outbox keeps what the cloud will get once the link is back. A stop order
removes the topology's entry.

>>> import tempfile
>>> book = OrderBook(Path(tempfile.mkdtemp()) / "orders.json")
>>> book.save("m:7070", [pb.RunContainer(topology="iot", package="sha256:ab", entry="p.py")],
...           {"iot": "PAUSED"}, [])
>>> again = OrderBook(book.path).load()
>>> again.master, [r.topology for r in again.runs], again.states
('m:7070', ['iot'], {'iot': 'PAUSED'})
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format

from headwater.common._durable import fsync_dir
from headwater.common._exceptions import HeadwaterError
from headwater.common._health import DEGRADED, Health
from headwater.common.wire.proto import runtime_pb2 as pb


@dataclass
class Orders:
    master: str = ""
    runs: list[pb.RunContainer] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)
    revisions: list[pb.Revise] = field(default_factory=list)


class OrderBook:
    """The file an agent keeps its orders in."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> Orders:
        """What was saved last (nothing saved yet: no orders); a damaged file raises."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return Orders(
                data.get("master", ""),
                [json_format.ParseDict(r, pb.RunContainer()) for r in data.get("runs", [])],
                dict(data.get("states", {})),
                [json_format.ParseDict(r, pb.Revise()) for r in data.get("revisions", [])],
            )
        except FileNotFoundError:
            return Orders()
        except (ValueError, TypeError, AttributeError, json_format.ParseError) as exc:
            raise HeadwaterError(f"the orders kept in {self.path} cannot be read: {exc}") from exc

    def save(
        self,
        master: str,
        runs: Iterable[pb.RunContainer],
        states: dict[str, str],
        revisions: Iterable[pb.Revise],
    ) -> None:
        data = {
            "master": master,
            "runs": [json_format.MessageToDict(r) for r in runs],
            "states": states,
            "revisions": [json_format.MessageToDict(r) for r in revisions],
        }
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the agent's alone
        with open(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)
        fsync_dir(self.path.parent)


def keep(
    book: OrderBook,
    health: Health,
    master: str,
    runs: Mapping[tuple[str, int], pb.RunContainer],
    states: dict[str, str],
    revisions: Mapping[str, pb.Revise],
) -> None:
    """Save the orders in ``book``; one that cannot be saved is the ``orders`` reason in
    ``health`` (the subgraphs go on; a reboot would wait for the master)."""
    try:
        book.save(master, runs.values(), states, revisions.values())
    except OSError as exc:
        health.set("orders", DEGRADED, f"cannot keep the orders on disk: {exc}")
    else:
        health.clear("orders")
