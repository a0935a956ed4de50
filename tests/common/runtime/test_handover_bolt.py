"""headwater.common.runtime._handover_bolt: a moved component's cloud side (issue 37) runs the
user's code on what reaches the cloud and forwards its edge copies' rows, each batch once."""

from __future__ import annotations

import json
from pathlib import Path

from headwater.common.api import Bolt, Topology, Tuple
from headwater.common.plan import boundary, cloud_part, edge_part, load_topology
from headwater.common.plan._domains import moved, receives_uplink
from headwater.common.plan._package_placement import PLACEMENT_FILE
from headwater.common.runtime._handover_bolt import HandoverBatchBolt, HandoverBolt, handover
from headwater.common.wire import encode
from headwater.common.wire._control import UplinkFeedback
from headwater.testing import TestContext

TOPO = """
from headwater import Bolt, Spout, Topology, shuffle
from headwater.placement import edge


class Readings(Spout):
    outputs = ("sensor", "value")

    def next_tuple(self):
        pass


class Tag(Bolt):
    outputs = ("sensor", "value")

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        self.ctx.emit([tup.values[0], tup.values[1] * 10])


topology = (
    Topology("st", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    .add_spout("readings", Readings, placement=edge())
    .add_bolt("tag", Tag, inputs={"readings": shuffle()}, parallelism=2)
    .add_bolt("sink", Tag, inputs={"tag": shuffle()})
)
"""


def _load(folder: Path, placement: dict[str, object] | None) -> Topology:
    folder.mkdir(exist_ok=True)
    (folder / "st.py").write_text(TOPO)
    if placement is not None:
        (folder / PLACEMENT_FILE).write_text(json.dumps(placement))
    return load_topology(folder / "st.py")


def test_a_moved_component_is_a_hand_over_bolt_in_the_cloud_either_way(tmp_path: Path) -> None:
    plain = _load(tmp_path / "plain", None)
    assert not moved(plain.component("tag"))
    for to, frm in (("edge", "cloud"), ("cloud", "edge")):
        t = _load(tmp_path / to, {"tag": {"to": to, "from": frm}})
        assert t.component("tag").placement.is_edge == (to == "edge")
        cloud = cloud_part(t)
        # the same cloud subgraph whichever side it moves to: the edge input crosses, and the
        # component stands in under its name, a bolt that takes the edge copies' rows
        assert [(c.name, c.kind) for c in cloud.components] == [
            ("readings", "spout"),
            ("tag", "bolt"),
            ("sink", "bolt"),
        ]
        assert receives_uplink(cloud.component("tag"))
        assert receives_uplink(cloud.component("readings"))
        assert not receives_uplink(cloud.component("sink"))
        # an agent runs the placement it is moved to, with an outbox for what crosses
        agent = [c.name for c in edge_part(t, {"site": "a"}).components]
        if to == "edge":
            assert agent == ["readings", "tag", "__outbox__tag"]
            assert boundary(t) == {"tag": ["default"]}
        else:
            assert agent == ["readings", "__outbox__readings"]
            assert boundary(t) == {"readings": ["default"]}


def _bolt(tmp_path: Path, index: int = 0) -> tuple[HandoverBolt, TestContext]:
    t = _load(tmp_path, {"tag": {"to": "edge", "from": "cloud"}})
    cloud = cloud_part(t)
    ctx = TestContext(cloud, "tag", index=index)
    bolt = cloud.component("tag").factory()
    assert isinstance(bolt, HandoverBolt)
    bolt.open(ctx)
    return bolt, ctx


def test_it_runs_the_users_code_and_forwards_each_edge_batch_once(tmp_path: Path) -> None:
    bolt, ctx = _bolt(tmp_path)
    assert ctx.system_messages == [UplinkFeedback("tag", "", resync={})]  # it tells the agents
    ctx.system_messages.clear()
    # what reaches the cloud from an agent not yet switched: the user's code handles it
    bolt.process(Tuple(None, "readings", "default", 1, ["s1", 2], 0.0))
    # an agent switched: its edge copy's rows, forwarded as they are
    batch = memoryview(encode([["default", ["s2", 30]], ["default", ["s3", 40]]]))
    bolt.on_uplink("gw-1", 1 << 20 | 1, 0, batch)
    bolt.on_uplink("gw-1", 1 << 20 | 1, 0, batch)  # resent: dropped
    assert ctx.values() == [["s1", 20], ["s2", 30], ["s3", 40]]
    assert ctx.counters["uplink_replays_dropped"] == 1
    assert bolt.receiver.last == {"gw-1": 1 << 20 | 1}
    # its replay filter is the state a receiver keeps ("last"): a receiver that becomes a
    # hand-over bolt, or one restored, goes on from it
    assert ctx.state["last"] == {"gw-1": 1 << 20 | 1}
    bolt.on_checkpoint(5)
    ctx.system_messages.clear()
    bolt.on_commit(5)
    assert ctx.system_messages == [UplinkFeedback("tag", "gw-1", confirmed=1 << 20 | 1)]


def test_only_its_first_task_speaks_to_the_agents(tmp_path: Path) -> None:
    """The ingress hands the batches to the component's first task; another one saying that it
    holds nothing would make the agents think the cloud lost batches."""
    _, ctx = _bolt(tmp_path, index=1)
    assert ctx.system_messages == []


class _Batch(Bolt):
    def process_values(self, component: str, stream: str, task: int, entries: list[object]) -> None:
        self.got = entries

    def process(self, tup: Tuple) -> None:
        pass


def test_a_dsl_chain_keeps_taking_whole_frames() -> None:
    from headwater.common.api import BatchBolt

    bolt = handover("chain", _Batch)
    assert isinstance(bolt, HandoverBatchBolt)
    bolt.process_values("src", "default", 1, [["x"]])
    assert isinstance(bolt.inner, _Batch) and bolt.inner.got == [["x"]]
    assert not isinstance(handover("plain", _Tagless), BatchBolt)


class _Tagless(Bolt):
    def process(self, tup: Tuple) -> None:
        pass
