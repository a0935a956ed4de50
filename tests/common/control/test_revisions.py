"""Revisions: an edit's diff must be what it claims; plans keep untouched task ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Bolt, Spout, Topology, fields, shuffle
from headwater.common.control._revisions import (
    EditError,
    RevisionLog,
    RevisionRecord,
    check_edit,
    diff,
    fingerprint,
    interrupted,
    without,
)
from headwater.common.plan import pack_round_robin, plan_from_json, plan_to_json, revise_plan
from headwater.common.wire._states import RevisionStatus
from headwater.placement import edge


class Source(Spout):
    outputs = ("key", "n")

    def next_tuple(self) -> None: ...


class Count(Bolt):
    outputs = ("key", "count")

    def process(self, tup: object) -> None: ...


class CountV2(Bolt):
    outputs = ("key", "count")

    def process(self, tup: object) -> None:
        print("v2")


class Stateful(Bolt):
    state_schema = 1

    def process(self, tup: object) -> None: ...


class StatefulV2(Bolt):
    state_schema = 2

    def process(self, tup: object) -> None: ...


class Migrating(StatefulV2):
    @staticmethod
    def migrate_state(old: object) -> object:
        return old


def _base(count: type[Bolt] = Count) -> Topology:
    return (
        Topology("t")
        .add_spout("src", Source)
        .add_bolt("count", count, parallelism=2, inputs={"src": fields("key")})
    )


def test_attach_adds_and_changes_nothing_else() -> None:
    old = _base()
    new = old.add_bolt("tap", Count, inputs={"src": shuffle()})
    assert check_edit("attach", ["tap"], old, new).added == ("tap",)
    with pytest.raises(EditError, match="would also"):
        check_edit(
            "attach", [], old, _base(CountV2).add_bolt("tap", Count, inputs={"src": shuffle()})
        )
    with pytest.raises(EditError, match="adds no component"):
        check_edit("attach", [], old, old)
    with pytest.raises(EditError, match="names"):
        check_edit("attach", ["other"], old, new)


def test_replace_changes_only_the_named_code() -> None:
    old = _base()
    assert diff(old, _base(CountV2)).replaced == ("count",)
    assert check_edit("replace", ["count"], old, _base(CountV2)).replaced == ("count",)
    assert fingerprint(old.component("src")) == fingerprint(_base(CountV2).component("src"))
    with pytest.raises(EditError, match="same as the running code"):
        check_edit("replace", [], old, old)
    with pytest.raises(EditError, match="only changes existing"):
        check_edit("replace", ["count"], old, without(_base(CountV2), ["count"]))
    wider = (
        Topology("t")
        .add_spout("src", Source)
        .add_bolt("count", CountV2, parallelism=3, inputs={"src": fields("key")})
    )
    assert check_edit("replace", ["count"], old, wider).replaced == ("count",)  # rescaled


def test_a_replacement_must_read_the_state_it_is_handed() -> None:
    def topo(bolt: type[Bolt]) -> Topology:
        return Topology("t").add_spout("src", Source).add_bolt("s", bolt, inputs={"src": shuffle()})

    with pytest.raises(EditError, match=r"state_schema 2.*has 1.*migrate_state"):
        check_edit("replace", ["s"], topo(Stateful), topo(StatefulV2))
    assert check_edit("replace", ["s"], topo(Stateful), topo(Migrating)).replaced == ("s",)


def test_remove_takes_away_and_must_leave_a_valid_topology() -> None:
    old = _base().add_bolt("tap", Count, inputs={"src": shuffle()})
    assert check_edit("remove", ["tap"], old, without(old, ["tap"])).removed == ("tap",)
    with pytest.raises(EditError, match="not valid"):
        check_edit("remove", ["src"], old, without(old, ["src"]))


def test_the_edge_boundary_stays_as_it_is() -> None:
    old = (
        Topology("t")
        .add_spout("src", Source, placement=edge())
        .add_bolt("count", Count, inputs={"src": fields("key")}, placement=edge())
        .add_bolt("sink", Count, inputs={"count": shuffle()})
    )
    moved = (
        Topology("t")
        .add_spout("src", Source, placement=edge())
        .add_bolt("count", CountV2, inputs={"src": fields("key")}, placement=edge())
        .add_bolt("sink", Count, inputs={"count": shuffle()})
    )
    assert check_edit("replace", ["count"], old, moved).replaced == ("count",)
    tap = old.add_bolt("tap", Count, inputs={"src": shuffle()}, placement=edge())
    assert check_edit("attach", [], old, tap).added == ("tap",)
    crossing = tap.add_bolt("cloud_tap", Count, inputs={"tap": shuffle()})
    with pytest.raises(EditError, match="what the edge sends to the cloud"):
        check_edit("attach", [], tap, crossing)


def test_revised_plans_keep_untouched_task_ids() -> None:
    old_t = _base().add_bolt("tap", Count, inputs={"src": shuffle()})
    old = pack_round_robin(old_t, 2)
    new_t = without(old_t, ["tap"]).add_bolt(
        "tap2", Count, parallelism=2, inputs={"src": shuffle()}
    )
    new = revise_plan(old, new_t)
    assert new.ids()["src"] == old.ids()["src"] and new.ids()["count"] == old.ids()["count"]
    assert "tap" not in new.ids()
    assert new.ids()["tap2"] == [5, 6]  # above every id used so far (tap had 4)
    assert sorted(i.container for i in new.instances if i.component == "tap2") == [0, 1]
    assert plan_from_json(plan_to_json(new)) == new


def test_the_revision_log_persists_and_marks_an_interrupted_edit(tmp_path: Path) -> None:
    log = RevisionLog(tmp_path / "revisions.json")
    log.add(
        RevisionRecord(1, "submit", "sha256:a", "t.py", [], "", 0.0, {}, {}, RevisionStatus.APPLIED)
    )
    log.add(RevisionRecord(2, "attach", "sha256:b", "t.py", [], "ana", 1.0, {}, {}))
    again = RevisionLog(tmp_path / "revisions.json")
    assert [r.status for r in again.records] == ["applied", "rolled_back"]
    assert again.records[1].author == "ana" and again.next_number() == 3
    assert again.records[0].hash != again.records[1].hash
    # an agent killed while switching takes the revision again, under the same number
    assert interrupted(again.records[1]) and not interrupted(again.records[0])
    again.add(RevisionRecord(2, "attach", "sha256:b", "t.py", [], "ana", 2.0, {}, {}))
    assert [(r.revision, r.time) for r in again.records] == [(1, 0.0), (2, 2.0)]


def _dsl(extra: bool, fused_chain: bool) -> Topology:
    from headwater.common.connectors import TransactionalFileSink
    from headwater.dsl import Pipeline

    p = Pipeline("d", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
    src = p.from_collection("src", [("k", 1)])
    if fused_chain:
        mid = src.map("m1", lambda kv: kv)
        mid.map("m2", lambda kv: kv).to("out", lambda: TransactionalFileSink("/tmp/o"))
    else:
        mid = src.reduce_by_key("sum", lambda a, b: a + b)
        mid.to("out", lambda: TransactionalFileSink("/tmp/o"))
    if extra:
        mid.filter("big", lambda kv: kv[1] > 1).to(
            "bigout", lambda: TransactionalFileSink("/tmp/b")
        )
    return p.build()


def test_dsl_steps_attach_at_a_component_boundary_and_a_split_chain_is_explained() -> None:
    d = check_edit("attach", [], _dsl(False, False), _dsl(True, False))
    assert d.added == ("big", "bigout")
    with pytest.raises(EditError, match=r"fused steps into 'src'.*fuse=False"):
        check_edit("attach", [], _dsl(False, True), _dsl(True, True))


def test_an_edit_keeps_the_mark_of_a_move() -> None:
    """A moved component runs in the cloud as a hand-over bolt (its mark, from the placement
    file): an edit that drops the mark would drop the bolt that takes its edge copies' rows."""
    from dataclasses import replace

    from headwater.common.api._config import HANDOVER

    old, name = _base(), "count"
    marked = replace(
        old,
        components=tuple(
            replace(c, config={**c.config, HANDOVER: "edge"}) if c.name == name else c
            for c in old.components
        ),
    )
    with pytest.raises(EditError, match="was moved"):
        check_edit("replace", [name], marked, old)
