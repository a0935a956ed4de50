"""Where the master's worker scheduler puts cloud containers (cloud/master/_scheduler.py).

A real ``Master`` (its state folder the test's own) with deployments and attached workers
made by hand: each worker's session queue is what ``Nodes.attach`` would hand it, and the
orders in it are what the worker would be told to run. Containers spread over the workers,
the least loaded (of every topology) first, ties by id; containers that wait for workers are
dealt once no new worker has attached for the placement delay, so workers starting together
share them (the compose cluster's two workers, after its init submitted the IoT example).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from headwater.cloud.master._master import Deployment, Master
from headwater.cloud.master._nodes import NodeRecord
from headwater.cloud.master._scheduler import deal
from headwater.common.wire.proto import runtime_pb2 as pb


def _master(tmp_path: Path, delay: float = 0.0) -> Master:
    return Master(tmp_path / "master", placement_delay=delay)


def _attach(master: Master, node_id: str) -> None:
    """As ``Nodes.attach`` does: a session queue, then the master deals what waits."""
    master.nodes.records[node_id] = NodeRecord(
        pb.NodeInfo(node_id=node_id, kind="worker"), queue=asyncio.Queue()
    )
    master.orders.attached(node_id)


def _submit(master: Master, name: str, containers: int) -> Deployment:
    dep = Deployment(name, "sha256:" + "0" * 64, "topo.py", containers)
    master.deployments[name] = dep
    master.orders.schedule(dep)
    return dep


def _told(master: Master, node_id: str) -> list[str]:
    """The containers a worker's session was told to run, in order."""
    queue = master.nodes.records[node_id].queue
    assert queue is not None
    out = []
    while not queue.empty():
        run = queue.get_nowait().run
        out.append(f"{run.topology}/{run.container}")
    return out


def test_two_containers_over_two_workers_one_each(tmp_path: Path) -> None:
    master = _master(tmp_path)
    _attach(master, "w1")
    _attach(master, "w2")
    dep = _submit(master, "iot", 2)
    assert dep.assignment == {0: "w1", 1: "w2"}
    assert (_told(master, "w1"), _told(master, "w2")) == (["iot/0"], ["iot/1"])


def test_three_containers_over_two_workers_two_and_one(tmp_path: Path) -> None:
    master = _master(tmp_path)
    for w in ("w2", "w1"):  # ties go by id, not by when a worker attached
        _attach(master, w)
    dep = _submit(master, "iot", 3)
    assert dep.assignment == {0: "w1", 1: "w2", 2: "w1"}


def test_a_second_topology_fills_the_emptier_worker_first(tmp_path: Path) -> None:
    master = _master(tmp_path)
    _attach(master, "w1")
    _attach(master, "w2")
    _submit(master, "first", 3)  # w1: 2, w2: 1
    second = _submit(master, "second", 2)
    assert second.assignment == {0: "w2", 1: "w1"}  # w2 first; then 2 and 2: by id
    third = _submit(master, "third", 1)
    assert third.assignment == {0: "w2"}  # 3 and 2
    counts = {w: len(_told(master, w)) for w in ("w1", "w2")}
    assert counts == {"w1": 3, "w2": 3}


def test_deal_is_least_loaded_first_ties_by_id() -> None:
    assert deal([0, 1, 2, 3], {"b": 0, "a": 0, "c": 2}) == {0: "a", 1: "b", 2: "a", 3: "b"}
    assert deal([5], {"w9": 1, "w10": 1}) == {5: "w10"}  # by id as a string
    assert deal([], {"a": 0}) == {}


def test_containers_waiting_for_workers_go_to_the_workers_that_start_together(
    tmp_path: Path,
) -> None:
    """The compose cluster's order: the topology first, then its two workers attach half a
    second apart; before, the first to attach took both containers."""

    async def scenario() -> None:
        master = _master(tmp_path, delay=2.0)
        dep = _submit(master, "iot", 2)  # no worker yet: both wait
        assert dep.assignment == {}
        _attach(master, "w1")
        assert dep.assignment == {}  # put off: more workers may be starting
        await asyncio.sleep(0.5)
        _attach(master, "w2")
        w2_at = time.monotonic()
        assert dep.assignment == {}
        deadline = time.monotonic() + 30
        while not dep.assignment and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert time.monotonic() - w2_at >= 2.0  # counted from the last new worker
        assert dep.assignment == {0: "w1", 1: "w2"}
        assert (_told(master, "w1"), _told(master, "w2")) == (["iot/0"], ["iot/1"])
        # workers known: a new topology is dealt at once, and a dealt container stays put
        # when a worker attaches again or a new one comes
        later = _submit(master, "later", 1)
        assert later.assignment == {0: "w1"}
        _attach(master, "w1")
        _attach(master, "w3")
        assert dep.assignment == {0: "w1", 1: "w2"} and later.assignment == {0: "w1"}

    asyncio.run(scenario())
