"""Dealing a topology's edge subgraph to agents as they attach (cloud/master/_node_orders.py).

A real ``Master`` (its state folder the test's own) with a deployment whose edge part selects
``fleet=sim``, and a fleet of agents attached by hand as ``Nodes.attach`` does (a session
queue, then ``attached``). Each matching agent is dealt the subgraph once, in the order they
came, and the record on disk says so; when they all attach again (a restarted master's
re-attach storm) each is told its orders again and the record is not rewritten: before,
every attach rewrote it and scanned the list of agents, N² work in a storm of N agents
(``bench/RESULTS.md``, "A fleet of agents against one master").
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from headwater.cloud.master._master import Deployment, Master
from headwater.cloud.master._nodes import NodeRecord
from headwater.common.wire.proto import runtime_pb2 as pb

FLEET = 1000


def _attach(master: Master, node_id: str, labels: dict[str, str]) -> None:
    master.nodes.records[node_id] = NodeRecord(
        pb.NodeInfo(node_id=node_id, kind="agent", labels=labels), queue=asyncio.Queue()
    )
    master.orders.attached(node_id)


def _told(master: Master, node_id: str) -> list[str]:
    queue = master.nodes.records[node_id].queue
    assert queue is not None
    out = []
    while not queue.empty():
        command = queue.get_nowait()
        out.append(f"{command.WhichOneof('command')}:{command.run.topology}")
    return out


def test_each_agent_is_dealt_once_and_a_reattach_storm_rewrites_no_record(
    tmp_path: Path,
) -> None:
    master = Master(tmp_path / "master")
    dep = Deployment("fleet", "sha256:" + "0" * 64, "t.py", 1, selectors=[{"fleet": "sim"}])
    master.deployments["fleet"] = dep
    master.orders.schedule(dep)
    record = tmp_path / "master" / "deployments.json"
    ids = [f"fleet-{i:04d}" for i in range(FLEET)]
    for node_id in ids:
        _attach(master, node_id, {"fleet": "sim"})
    _attach(master, "other", {"fleet": "real"})
    assert dep.agents == ids
    assert json.loads(record.read_text())[0]["agents"] == ids
    orders = ["run:fleet", "set_state:"]
    assert {n: _told(master, n) for n in ids} == dict.fromkeys(ids, orders)
    assert _told(master, "other") == []

    written = record.stat()
    for node_id in ids:  # the storm after a restart: every agent attaches again
        _attach(master, node_id, {"fleet": "sim"})
    assert (record.stat().st_ino, record.stat().st_mtime_ns) == (
        written.st_ino,
        written.st_mtime_ns,
    )
    assert dep.agents == ids
    assert {n: _told(master, n) for n in ids} == dict.fromkeys(ids, orders)

    _attach(master, "late", {"fleet": "sim"})  # a new agent is dealt it, and that is kept
    assert dep.agents == [*ids, "late"]
    assert json.loads(record.read_text())[0]["agents"] == [*ids, "late"]
