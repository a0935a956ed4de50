"""A task's keyed state notes changed keys only where a snapshot may read them."""

from __future__ import annotations

import pytest

from headwater import Bolt, Context, Spout, Topology, Tuple, fields
from headwater.common.api._state import KeyedState, UntrackedKeyedState
from headwater.common.runtime._task_state import TaskState

from ._opened import Opened


class _Src(Spout):
    outputs = ("k", "v")

    def next_tuple(self) -> None:
        pass


class _Count(Bolt):
    def open(self, ctx: Context) -> None:
        self.counts = ctx.keyed_state("counts")

    def process(self, tup: Tuple) -> None:
        self.counts[tup.values[0]] = self.counts.get(tup.values[0], 0) + 1


@pytest.mark.parametrize(
    ("mode", "tracked"),
    [("EFFECTIVELY_ONCE", True), ("ATLEAST_ONCE", False), ("ATMOST_ONCE", False)],
)
def test_only_an_exactly_once_task_notes_the_keys_it_writes(
    opened: Opened, mode: str, tracked: bool
) -> None:
    topology = (
        Topology("t", config={"topology.reliability.mode": mode})
        .add_spout("src", _Src)
        .add_bolt("count", _Count, inputs={"src": fields("k")})
    )
    inst = opened(topology, 2)
    counts = inst.ctx.keyed_state("counts")
    assert inst.store.tracked is tracked and counts.tracked is tracked
    assert type(counts) is (KeyedState if tracked else UntrackedKeyedState)
    counts["a"] = [1]
    _, put = counts.accessors()
    put("b", 2)
    del counts["b"]
    assert dict(counts.items()) == {"a": [1]}
    assert counts.take_changed() == ({"a", "b"} if tracked else set())
    assert counts._mutable == ({"a"} if tracked else set())


def test_a_task_state_makes_each_keyed_state_once() -> None:
    store = TaskState(tracked=False)
    assert store.keyed_state("x") is store.keyed_state("x") is store.keyed["x"]
    assert type(store.keyed_state("x")) is UntrackedKeyedState
    assert type(TaskState().keyed_state("x")) is KeyedState
