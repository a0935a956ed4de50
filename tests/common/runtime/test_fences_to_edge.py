"""A keyed component's move from the cloud to the edge (issue 37): the agent's retiring outbox
sink seals the fence last (``_switch_fence``, ``_outbox_sink``), each task of the cloud copy
gives up that site's keys at it (``_handover_bolt``), its container sends them once the
checkpoint holding them commits (``_move_outgoing``), and the cloud's topology master gathers
every task's part (``control/_site_states``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from headwater.common.api import Topology, Tuple
from headwater.common.control._site_states import SiteStates
from headwater.common.plan import cloud_part, edge_part, load_topology
from headwater.common.plan._fence_streams import FENCE_OUT, FENCE_STREAM
from headwater.common.plan._package_placement import PLACEMENT_FILE
from headwater.common.runtime._fence import fence_values
from headwater.common.runtime._handover import SITES_STATE
from headwater.common.runtime._handover_bolt import HandoverBolt
from headwater.common.runtime._move_outgoing import OUTGOING, GivenUp, MoveOutgoing
from headwater.common.runtime._outbox_sink import OutboxSink
from headwater.common.runtime._switch_fence import arriving, retiring_fences
from headwater.common.runtime._task_state import TaskState
from headwater.common.state import KeyedState
from headwater.common.state._state import load_snapshot
from headwater.common.wire import decode, encode
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.testing import TestContext

from .test_fences import TOPO


def _load(folder: Path, placement: dict[str, Any] | None) -> Topology:
    folder.mkdir(exist_ok=True)
    (folder / "k.py").write_text(TOPO.replace("placement=edge(),\n              config", "config"))
    if placement is not None:
        (folder / PLACEMENT_FILE).write_text(json.dumps(placement))
    return load_topology(folder / "k.py")


def _to_edge(tmp_path: Path) -> Topology:
    return _load(tmp_path, {"count": {"to": "edge", "from": "cloud"}})


def test_the_retiring_sink_of_its_input_seals_the_fence_last(tmp_path: Path) -> None:
    new = edge_part(_to_edge(tmp_path), {"site": "a"})
    assert arriving(new, "count") and not arriving(new, "readings")
    retiring = {"__outbox__readings": [4], "readings": []}
    fences = retiring_fences(new, retiring, 2, 40, {"site": "a"})
    assert list(fences) == [4]
    assert decode(fences[4]) == [FENCE_STREAM, fence_values(2, 40, "a", None, "", "edge")]
    # in the cloud by its code: nothing arrives, no fence
    plain = edge_part(_load(tmp_path / "plain", None), {"site": "a"})
    assert retiring_fences(plain, retiring, 2, 40, {"site": "a"}) == {}

    ctx = TestContext(new, "readings")
    sink = OutboxSink("readings")
    sink.open(ctx)
    sink.on_restore(39)
    sink.process(Tuple(None, "readings", "default", 1, ["s1", "a", 0.5], 0.0))
    sink.seal_fence(40, decode(fences[4]))
    sink.on_checkpoint(40)
    sink.on_commit(40)
    (frame,) = ctx.system_frames
    rows = [
        ["default", ["s1", "a", 0.5]],
        [FENCE_STREAM, fence_values(2, 40, "a", None, "", "edge")],
    ]
    assert frame.endswith(encode(rows))


def _wrapper(tmp_path: Path, index: int = 0) -> tuple[HandoverBolt, TestContext]:
    cloud = cloud_part(_to_edge(tmp_path))
    ctx = TestContext(cloud, "count", index=index)
    bolt = cloud.component("count").factory()
    assert isinstance(bolt, HandoverBolt)
    bolt.open(ctx)
    return bolt, ctx


def test_each_task_gives_up_its_keys_of_the_fenced_site(tmp_path: Path) -> None:
    bolt, ctx = _wrapper(tmp_path)
    for sensor, site in (("s1", "a"), ("s2", "a"), ("s3", "b")):
        ctx.keyed_state(SITES_STATE)[sensor] = site
        bolt.process(Tuple(None, "readings", "default", 1, [sensor, site, 0.5], 0.0))
    fence = ["gw-a", *fence_values(2, 40, "a", None, "", "edge")]
    bolt.process(Tuple(None, "readings", FENCE_OUT, 1, fence, 0.0))
    assert dict(ctx.keyed_state("counts").items()) == {"s3": 1}
    assert dict(ctx.keyed_state(SITES_STATE).items()) == {"s3": "b"}
    given = ctx.keyed_state(OUTGOING)["a"]
    assert given == {
        "revision": 2,
        "keys": {"counts": {"s1": 1, "s2": 1}, SITES_STATE: {"s1": "a", "s2": "a"}},
    }
    # the same fence again: nothing more; another agent's site with no key: said, empty
    bolt.process(Tuple(None, "readings", FENCE_OUT, 1, fence, 0.0))
    bolt.process(
        Tuple(
            None,
            "readings",
            FENCE_OUT,
            1,
            ["gw-c", *fence_values(2, 41, "c", None, "", "edge")],
            0.0,
        )
    )
    assert ctx.keyed_state(OUTGOING)["c"] == {"revision": 2, "keys": {}}
    assert ctx.counters["handover_keys_given"] == 2


def test_the_container_sends_what_was_given_up_once_its_checkpoint_commits() -> None:
    sent: list[GivenUp] = []

    async def send(g: GivenUp) -> None:
        sent.append(g)

    outgoing = MoveOutgoing(lambda task: "count" if task == 1 else None, send)
    state = TaskState()
    state.keyed["counts"] = KeyedState({"s9": 3})
    state.keyed[OUTGOING] = KeyedState()
    state.keyed[OUTGOING]["a"] = {"revision": 2, "keys": {"counts": {"s1": 5}}}
    blob = state.dump(40)
    outgoing.on_state(2, 40, blob)  # a task of another component: not read
    outgoing.on_state(1, 40, blob)
    asyncio.run(outgoing.on_commit(39))
    assert sent == []
    asyncio.run(outgoing.on_commit(40))
    (g,) = sent
    assert (g.checkpoint, g.revision, g.component, g.task, g.site) == (40, 2, "count", 1, "a")
    _, keyed, _ = load_snapshot(g.blob)
    assert {n: dict(v.items()) for n, v in keyed.items()} == {"counts": {"s1": 5}}
    asyncio.run(outgoing.on_commit(41))
    assert len(sent) == 1  # once
    outgoing.on_state(1, 42, blob)
    outgoing.forget()  # a restore: the replay gives it up again
    asyncio.run(outgoing.on_commit(42))
    assert len(sent) == 1


def _part(task: int, site: str = "a", revision: int = 2) -> pb.StateTransfer:
    return pb.StateTransfer(
        component="count", task_id=task, revision=revision, site=site, blob=bytes([task])
    )


def test_the_topology_master_gathers_every_tasks_part_of_a_site() -> None:
    ready: list[pb.MoveState] = []
    states = SiteStates("k", lambda c: [3, 4] if c == "count" else [])
    states.ready = ready.append
    states.put(_part(4))
    states.put(_part(4))  # again: nothing more
    assert ready == []
    states.put(_part(3))
    (msg,) = ready
    assert (msg.topology, msg.revision, msg.component, msg.site) == ("k", 2, "count", "a")
    assert list(msg.parts) == [b"\x03", b"\x04"]  # by task
    states.put(_part(3))  # a container that restored sends it again: gathered already
    states.put(_part(3, revision=1))  # an older move's
    assert len(ready) == 1
    assert states.gathered[("count", "a")] is msg
