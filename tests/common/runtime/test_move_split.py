"""A receiver's split at each agent's fence (issue 37): the moved component's cloud copy gets
an agent's rows while it runs in the cloud for that agent, by its newest fence, or where it
ran before any; a fence of an older move changes nothing."""

from __future__ import annotations

from typing import Any

from headwater.common.runtime._move_split import MOVE_PREFIX, MoveSplit

MOVE = MOVE_PREFIX + "default"


def test_the_cloud_copy_takes_an_agents_rows_while_it_runs_in_the_cloud_for_it() -> None:
    state: dict[str, Any] = {}
    split = MoveSplit(["default"], state, before="cloud")  # moving to the edge
    assert split.copies("a", "default") == MOVE and split.copies("b", "default") == MOVE
    assert split.copies("a", "other") is None  # a stream it does not read
    assert split.fence("a", 7, "edge")
    assert split.copies("a", "default") is None and split.copies("b", "default") == MOVE
    assert not split.fence("a", 7, "edge") and not split.fence("a", 6, "cloud")
    assert split.fence("a", 9, "cloud")  # the move back
    assert split.copies("a", "default") == MOVE
    assert state == {"where": {"a": ["cloud", 9]}, "before": "cloud"}
    # restored from the receiver's checkpoint: the same split; ``before`` is kept
    again = MoveSplit(["default"], state, before="edge")
    assert again.before == "cloud" and again.copies("a", "default") == MOVE


def test_moving_to_the_cloud_an_agents_rows_reach_the_copy_after_its_fence() -> None:
    split = MoveSplit(["default"], {}, before="edge")
    assert split.copies("a", "default") is None
    split.fence("a", 3, "cloud")
    assert split.copies("a", "default") == MOVE
