"""A component's keyed state split between a new number of tasks, as the emitter routes keys."""

from __future__ import annotations

import pytest

from headwater.common.plan._routing import key_hash
from headwater.common.runtime._rescale import RescaleError, rescale
from headwater.common.state import KeyedState, State
from headwater.common.state._state import dump_snapshot, load_snapshot


def _blob(counts: dict[str, int], plain: dict[str, int] | None = None) -> bytes:
    return dump_snapshot(State(plain), {"count": KeyedState(counts)})


def test_every_key_goes_to_the_task_that_now_routes_it() -> None:
    keys = {f"k{i}": i for i in range(40)}
    old = [_blob({k: v for k, v in keys.items() if key_hash(k) % 2 == t}) for t in range(2)]
    got: dict[str, int] = {}
    for index in range(3):
        _, keyed, _ = load_snapshot(rescale("count", [*old, None], index, 3))
        mine = dict(keyed["count"])
        assert all(key_hash(k) % 3 == index for k in mine)
        got.update(mine)
    assert got == keys


def test_state_outside_keyed_state_cannot_be_split() -> None:
    with pytest.raises(RescaleError, match=r"outside keyed_state.*'offset'"):
        rescale("src", [_blob({}, {"offset": 7})], 0, 2)
