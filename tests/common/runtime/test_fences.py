"""A keyed component's move from the edge to the cloud (issue 37): the agent's fence carries
its state in its outbox (``_switch_fence``, ``_outbox_sink``), the cloud receiver passes it on
to every task of the cloud copy (``_receiver``, wired by ``plan/_domains``), and each task
takes its keys (``_handover_bolt``), trusting none of the agent's bytes."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from headwater.common.api import DEAD_LETTERS, Bolt, Topology, Tuple, shuffle
from headwater.common.plan import cloud_part, edge_part, load_topology
from headwater.common.plan._fence_streams import FENCE_FOR, FENCE_OUT, FENCE_STREAM, MOVE_PREFIX
from headwater.common.plan._package_placement import PLACEMENT_FILE
from headwater.common.plan._routing import key_hash
from headwater.common.runtime._fence import FENCE_START, fence_values
from headwater.common.runtime._handover import SITES_STATE
from headwater.common.runtime._handover_bolt import HandoverBolt
from headwater.common.runtime._outbox_sink import OutboxSink
from headwater.common.runtime._receiver import UplinkSpout
from headwater.common.runtime._switch_fence import fence_snapshots
from headwater.common.state import KeyedState, State
from headwater.common.state._state import dump_snapshot, load_snapshot
from headwater.common.wire import decode, encode
from headwater.testing import TestContext

TOPO = """
from headwater import Bolt, Spout, Topology, fields, shuffle
from headwater.placement import edge, sites


class Readings(Spout):
    outputs = ("sensor", "site", "value")

    def next_tuple(self):
        pass


class Count(Bolt):
    outputs = ("sensor", "count")

    def open(self, ctx):
        self.ctx = ctx
        self.counts = ctx.keyed_state("counts")

    def process(self, tup):
        n = self.counts[tup.values[0]] = self.counts.get(tup.values[0], 0) + 1
        self.ctx.emit([tup.values[0], n])


class Tag(Bolt):
    outputs = ("sensor", "count")

    def process(self, tup):
        pass


topology = (
    Topology("k", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    .add_spout("readings", Readings, placement=edge())
    .add_bolt("count", Count, inputs={"readings": fields("sensor")}, placement=edge(),
              config=sites("site"), parallelism=2)
    .add_bolt("tag", Tag, inputs={"count": shuffle()}, placement=edge())
    .add_bolt("sink", Tag, inputs={"tag": shuffle()})
)
"""


def _load(folder: Path, placement: dict[str, Any] | None) -> Topology:
    folder.mkdir(exist_ok=True)
    (folder / "k.py").write_text(TOPO)
    if placement is not None:
        (folder / PLACEMENT_FILE).write_text(json.dumps(placement))
    return load_topology(folder / "k.py")


def _moved(tmp_path: Path) -> Topology:
    return _load(tmp_path, {"count": {"to": "cloud", "from": "edge"}, "tag": "cloud"})


def test_the_plan_wires_the_fence_of_a_keyed_move_only(tmp_path: Path) -> None:
    cloud = cloud_part(_moved(tmp_path))
    receiver = cloud.component("readings")
    assert receiver.stream(FENCE_OUT) is not None
    fences = [(i.component, i.grouping.kind) for i in cloud.component("count").inputs]
    assert fences == [("readings", "fields"), ("readings", "all")]
    sink = edge_part(_moved(tmp_path), {"site": "a"}).component("__outbox__readings")
    assert list(sink.config[FENCE_FOR]) == ["count", "site", "cloud"]
    # not moved, or moved without keyed state: no fence anywhere
    plain = _load(tmp_path / "plain", None)
    assert cloud_part(plain).component("tag").stream(FENCE_OUT) is None
    assert FENCE_FOR not in edge_part(plain, {"site": "a"}).component("__outbox__tag").config
    stateless = cloud_part(_load(tmp_path / "tag", {"tag": {"to": "cloud", "from": "edge"}}))
    assert stateless.component("count").stream(FENCE_OUT) is None
    assert [i.stream for i in stateless.component("tag").inputs] == ["default"]


def _receiver(tmp_path: Path) -> tuple[UplinkSpout, TestContext]:
    cloud = cloud_part(_moved(tmp_path))
    ctx = TestContext(cloud, "readings")
    spout = UplinkSpout("readings")
    spout.open(ctx)
    return spout, ctx


def test_the_receiver_passes_a_fence_on_in_its_place_and_dead_letters_a_bad_one(
    tmp_path: Path,
) -> None:
    spout, ctx = _receiver(tmp_path)
    fence = fence_values(2, 40, "a", b"state")
    rows = [["default", ["s1", "a", 1]], [FENCE_STREAM, fence], ["default", ["s1", "a", 2]]]
    spout.on_uplink("gw-a", 1, 0, memoryview(encode(rows)))
    spout.next_tuple()
    assert [(e.stream, e.values) for e in ctx.emitted] == [
        ("default", ["s1", "a", 1]),
        (FENCE_OUT, ["gw-a", *fence]),
        ("default", ["s1", "a", 2]),
    ]
    ctx.emitted.clear()
    bad = [
        [FENCE_STREAM, ["2", 40, "a", None, "", "cloud"]],
        [FENCE_STREAM, [2, 40, "a", 7, "", "cloud"]],
        [FENCE_STREAM, [2, 40, "a", None, "", "moon"]],
        [FENCE_STREAM, [2, 40, "a", None, ""]],
    ]
    spout.on_uplink("gw-a", 2, 1, memoryview(encode(bad)))
    spout.next_tuple()
    reasons = [e.values[1] for e in ctx.emitted if e.stream == DEAD_LETTERS]
    assert reasons == [
        "an uplink row whose values are not a list of 6 for '__fence__'",
        "a fence row whose revision or checkpoint is not an integer",
        "a fence row whose state is not bytes",
        "a fence row whose target is not 'edge' or 'cloud'",
    ]
    assert [e for e in ctx.emitted if e.stream == FENCE_OUT] == []


class _Land(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


def test_an_agent_cannot_write_to_the_moved_copys_own_streams(tmp_path: Path) -> None:
    """The ``__move__`` streams of a split input are the receiver's alone: a row an agent
    sends on one is refused, as any stream the component does not declare."""
    shared = _load(tmp_path, {"count": {"to": "cloud", "from": "edge"}, "tag": "cloud"})
    cloud = cloud_part(shared.add_bolt("land", _Land, inputs={"readings": shuffle()}))
    ctx = TestContext(cloud, "readings")
    spout = UplinkSpout("readings")
    spout.open(ctx)
    assert cloud.component("readings").stream(MOVE_PREFIX + "default") is not None
    forged = [[MOVE_PREFIX + "default", ["s1", "a", 1]]]
    spout.on_uplink("gw-a", 1, 0, memoryview(encode(forged)))
    spout.next_tuple()
    assert [e.stream for e in ctx.emitted] == [DEAD_LETTERS]
    assert "__move__default" in ctx.emitted[0].values[1]


def test_a_receiver_no_moved_component_reads_takes_no_fence(tmp_path: Path) -> None:
    cloud = cloud_part(_load(tmp_path, None))
    ctx = TestContext(cloud, "tag")
    spout = UplinkSpout("tag")
    spout.open(ctx)
    spout.on_uplink(
        "gw-a", 1, 0, memoryview(encode([[FENCE_STREAM, fence_values(2, 4, "a", None)]]))
    )
    spout.next_tuple()
    assert [e.stream for e in ctx.emitted] == [DEAD_LETTERS]


def _agent_state(counts: dict[str, int], site: str = "a") -> bytes:
    keyed = {
        "counts": KeyedState(dict(counts)),
        SITES_STATE: KeyedState(dict.fromkeys(counts, site)),
    }
    return dump_snapshot(State(), keyed)


def _wrapper(tmp_path: Path, index: int) -> tuple[HandoverBolt, TestContext]:
    cloud = cloud_part(_moved(tmp_path))
    ctx = TestContext(cloud, "count", index=index)
    bolt = cloud.component("count").factory()
    assert isinstance(bolt, HandoverBolt)
    bolt.open(ctx)
    return bolt, ctx


def _fence(state: bytes | None, revision: int = 2, error: str = "") -> Tuple:
    values = ["gw-a", *fence_values(revision, 40, "a", state, error)]
    return Tuple(None, "readings", FENCE_OUT, 1, values, 0.0)


def test_each_task_takes_the_keys_its_grouping_routes_to_it_once(tmp_path: Path) -> None:
    counts = {f"s{i}": i + 1 for i in range(12)}
    taken: dict[str, int] = {}
    for index in (0, 1):
        bolt, ctx = _wrapper(tmp_path, index)
        bolt.process(_fence(_agent_state(counts)))
        mine = dict(ctx.keyed_state("counts").items())
        assert all(key_hash(k) % 2 == index for k in mine)
        assert ctx.keyed_state(SITES_STATE).get("s0", "a") == "a"
        taken |= mine
        # the user's code goes on from there
        key = next(iter(mine))
        bolt.process(Tuple(None, "readings", "default", 1, [key, "a", 0.5], 0.0))
        assert ctx.values() == [[key, counts[key] + 1]]
        # the same move's fence again (a resend the replay filter let through): nothing
        bolt.process(_fence(_agent_state({key: 99})))
        assert ctx.keyed_state("counts")[key] == counts[key] + 1
        assert ctx.counters["handover_keys"] == len(mine)
    assert taken == counts


@pytest.mark.parametrize(
    ("state", "error", "says"),
    [
        (None, "'count' keeps state outside keyed_state ('n')", "did not move to the cloud"),
        (b"not a pickle", "", "an agent's state that cannot be read"),
        (pickle.dumps({"keyed": {"counts": [1]}}), "", "an agent's state that is not a snapshot"),
        (dump_snapshot(State({"n": 1}), {}), "", "keeps state outside keyed_state"),
    ],
)
def test_a_fence_whose_state_cannot_be_taken_is_dead_lettered(
    tmp_path: Path, state: bytes | None, error: str, says: str
) -> None:
    bolt, ctx = _wrapper(tmp_path, 0)
    bolt.process(_fence(state, error=error))
    assert len(ctx.reported_dead_letters) == 1
    row, origin = ctx.reported_dead_letters[0]
    assert (row[0], origin) == ("count", "agent gw-a") and says in row[1], row
    assert dict(ctx.keyed_state("counts").items()) == {}


class _Boom:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("touch /tmp/headwater-fence-ran",))


def test_an_agents_state_never_runs_code_in_the_cloud(tmp_path: Path) -> None:
    marker = Path("/tmp/headwater-fence-ran")
    marker.unlink(missing_ok=True)
    evil = pickle.dumps({"state": {}, "keyed": {"counts": {"s0": _Boom()}}})
    bolt, ctx = _wrapper(tmp_path, 0)
    bolt.process(_fence(evil))
    assert not marker.exists()
    assert "posix.system" in ctx.reported_dead_letters[0][0][1]


def test_a_key_both_sides_hold_takes_nothing_of_that_state(tmp_path: Path) -> None:
    bolt, ctx = _wrapper(tmp_path, 0)
    mine = [f"s{i}" for i in range(20) if key_hash(f"s{i}") % 2 == 0]
    ctx.keyed_state("counts")[mine[0]] = 5
    bolt.process(_fence(_agent_state({k: 1 for k in mine})))
    assert "relation is false" in ctx.reported_dead_letters[0][0][1]
    assert dict(ctx.keyed_state("counts").items()) == {mine[0]: 5}


def test_the_agent_seals_its_copys_state_in_the_fence_first(tmp_path: Path) -> None:
    t = _moved(tmp_path)
    new = edge_part(t, {"site": "a"})
    old = edge_part(_load(tmp_path / "old", None), {"site": "a"})
    snaps = {
        1: _agent_state({"s1": 3}),  # count's two tasks at the switch checkpoint
        2: _agent_state({"s2": 4}),
    }
    old_ids: dict[str, list[int]] = {c.name: [] for c in old.components} | {"count": [1, 2]}
    out = fence_snapshots(
        new, {7: ("__outbox__readings", None)}, old_ids, snaps.get, 2, 40, {"site": "a"}
    )
    state, _, _ = load_snapshot(out[7])
    stream, (revision, at, site, blob, error, to) = state[FENCE_START]
    assert (stream, revision, at, site, error, to) == (FENCE_STREAM, 2, 40, "a", "", "cloud")
    _, keyed, _ = load_snapshot(blob)
    assert dict(keyed["counts"].items()) == {"s1": 3, "s2": 4}
    # an agent without the label: the fence says why, and carries nothing
    out = fence_snapshots(new, {7: ("__outbox__readings", None)}, old_ids, snaps.get, 2, 40, {})
    state, _, _ = load_snapshot(out[7])
    assert state[FENCE_START][1][3:] == [
        None,
        "this agent has no label 'site' (the sites field of 'count')",
        "cloud",
    ]

    # the outbox sink restored from that snapshot seals the fence before any row
    ctx = TestContext(new, "__outbox__readings", state=State({FENCE_START: state[FENCE_START]}))
    sink = OutboxSink("readings")
    sink.open(ctx)
    sink.on_restore(40)
    sink.process(Tuple(None, "readings", "default", 1, ["s1", "a", 0.5], 0.0))
    sink.on_checkpoint(41)
    sink.on_commit(41)
    assert FENCE_START not in ctx.state
    (frame,) = ctx.system_frames
    rows = decode(frame[-len(encode([state[FENCE_START], ["default", ["s1", "a", 0.5]]])) :])
    assert rows == [state[FENCE_START], ["default", ["s1", "a", 0.5]]]
