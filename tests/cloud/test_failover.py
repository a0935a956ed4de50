"""A lost worker's containers move to the online workers that share its checkpoint store, the
least loaded first, once it has been offline long enough; a worker with a local store, or
one whose store no one shares, keeps them until it returns."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from headwater.cloud.master._deployments import Deployment
from headwater.cloud.master._failover import Failover
from headwater.cloud.master._nodes import NodeRecord
from headwater.common.wire.proto import runtime_pb2 as pb

S3 = "s3://ckpt/prod at http://127.0.0.1:3900"


class _Port:
    def __init__(self, *deps: Deployment) -> None:
        self._deps = {d.name: d for d in deps}
        self.ran: list[tuple[str, int, str]] = []
        self.saves = 0

    @property
    def deployments(self) -> Mapping[str, Deployment]:
        return self._deps

    def run(self, dep: Deployment, container: int) -> None:
        self.ran.append((dep.name, container, dep.assignment[container]))

    def save(self) -> None:
        self.saves += 1


def _worker(node: str, store: str, seen: float, online: bool) -> NodeRecord:
    record = NodeRecord(pb.NodeInfo(node_id=node, kind="worker", checkpoint_store=store))
    record.queue = asyncio.Queue() if online else None
    record.last_seen = seen
    return record


def test_a_lost_workers_containers_go_to_the_workers_sharing_its_store() -> None:
    now = [100.0]
    a = Deployment("a", "sha256:x", "a.py", 3, assignment={0: "w1", 1: "w2", 2: "w1"})
    b = Deployment("b", "sha256:y", "b.py", 1, assignment={0: "w3"})
    port = _Port(a, b)
    records = {
        "w1": _worker("w1", S3, seen=90.0, online=False),  # gone for 10 s
        "w2": _worker("w2", S3, seen=99.0, online=True),
        "w3": _worker("w3", S3, seen=99.5, online=True),
        "w4": _worker("w4", "", seen=99.5, online=True),  # its own disk: takes none
    }
    failover = Failover(port, records, after=15.0, clock=lambda: now[0])
    failover.tick()
    assert port.ran == [] and a.assignment[0] == "w1"  # not yet: 10 s < 15 s

    now[0] = 106.0
    for alive in ("w2", "w3", "w4"):  # still heard
        records[alive].last_seen = 105.0
    failover.tick()
    # the least loaded sharing worker first, ties by id: w2 (1) and w3 (1) -> w2, then w3
    assert port.ran == [("a", 0, "w2"), ("a", 2, "w3")]
    assert a.assignment == {0: "w2", 1: "w2", 2: "w3"} and port.saves == 1
    failover.tick()
    assert len(port.ran) == 2 and port.saves == 1  # nothing more to move


def test_containers_stay_with_a_local_store_or_when_no_one_shares_it() -> None:
    now = 1000.0
    a = Deployment("a", "sha256:x", "a.py", 2, assignment={0: "w1", 1: "w2"})
    port = _Port(a)
    records = {
        "w1": _worker("w1", "", seen=10.0, online=False),  # local store: waits for it
        "w2": _worker("w2", S3, seen=10.0, online=False),  # shared, but no one else has it
        "w3": _worker("w3", "s3://other at http://h:1", seen=999.0, online=True),
    }
    Failover(port, records, after=15.0, clock=lambda: now).tick()
    assert port.ran == [] and a.assignment == {0: "w1", 1: "w2"} and port.saves == 0
    # a worker the master has not heard from since it started: its store is unknown
    a.assignment[1] = "w9"
    Failover(port, records, after=15.0, clock=lambda: now).tick()
    assert port.ran == []
