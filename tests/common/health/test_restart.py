"""A health manager restarted mid-action, and an action's outcome following its revision's.

The master records an action as pending before it makes the action's edit, then hears the
revision the edit made (``applied``), then follows that revision in the topology's history
(``settle``). A restarted manager finds what it had pending in its store: ``settle`` finds
the revision by the action's reason, or says it was never applied. Either way it is not
repeated within its cooldown, and a rescale that was not applied is not black-listed.
"""

from __future__ import annotations

from pathlib import Path

from headwater.common._clock import ManualClock
from headwater.common.health import (
    Action,
    HealthManager,
    JsonFileStore,
    RevisionOutcome,
    TakenAction,
)
from headwater.common.health._manager import MATCH_S, NEVER_APPLIED

from ._sim import Sim
from .test_manager import POLICY, manager


def _until_a_rescale(sim: Sim, hm: HealthManager, clock: ManualClock) -> Action:
    """Tick at three times what the bolt keeps up with until the manager rescales it."""
    for _ in range(10):
        s = sim.step(300.0)
        clock.advance_to(s.at)
        got = hm.tick(s)
        if got:
            [action] = got
            assert action.kind == "rescale" and action.parallelism == 5
            return action
    raise AssertionError("no rescale")


def _ticks(sim: Sim, hm: HealthManager, clock: ManualClock, n: int) -> list[Action]:
    """``n`` ticks 10 s apart at the same load, nothing applied."""
    got: list[Action] = []
    for _ in range(n):
        s = sim.step(300.0)
        clock.advance_to(s.at)
        got += hm.tick(s)
    return got


def _reloaded(clock: ManualClock, path: Path) -> tuple[HealthManager, TakenAction]:
    """A manager started again on ``path``, and the one action it has taken."""
    again = manager(clock, store=JsonFileStore(path))
    [taken] = again.report().taken
    return again, taken


def test_an_action_the_master_stopped_on_before_its_edit_fails_and_is_not_repeated_early(
    tmp_path: Path,
) -> None:
    clock, sim, path = ManualClock(), Sim(), tmp_path / "health" / "t.json"
    action = _until_a_rescale(sim, manager(clock, store=JsonFileStore(path)), clock)
    decided = clock.monotonic()
    # the master died before it made the edit: pending, with no revision
    again, taken = _reloaded(clock, path)
    assert (taken.action, taken.revision, taken.outcome) == (action, None, "pending")
    again.settle([])  # no revision of the health manager's in the history: never applied
    [taken] = again.report().taken
    assert (taken.revision, taken.outcome) == (None, NEVER_APPLIED)
    assert _reloaded(clock, path)[1].outcome == NEVER_APPLIED  # saved
    again.settle([])
    assert again.report().taken == [taken]  # settled once
    # its cooldown holds (not repeated), then, the symptom still there, it is decided again:
    # not black-listed, as a rescale that did not help would be
    assert _ticks(sim, again, clock, 5) == []
    assert clock.monotonic() - decided < POLICY.cooldown_s
    [fresh] = _ticks(sim, again, clock, 2)
    assert (fresh.kind, fresh.parallelism) == ("rescale", 5)
    assert again.report().blacklisted == []
    assert [t.outcome for t in again.report().taken] == [NEVER_APPLIED, "pending"]
    assert not list((tmp_path / "health").glob("*.tmp"))


def test_an_action_whose_edit_the_master_made_is_found_by_its_reason_and_follows_it(
    tmp_path: Path,
) -> None:
    clock, sim, path = ManualClock(), Sim(), tmp_path / "t.json"
    action = _until_a_rescale(sim, manager(clock, store=JsonFileStore(path)), clock)
    again, taken = _reloaded(clock, path)
    history = [
        RevisionOutcome(2, action.reason, taken.at - MATCH_S - 1, "applied"),  # long before
        RevisionOutcome(3, "another reason", taken.at + 1, "applied"),
        RevisionOutcome(4, action.reason, taken.at + 1, "applying"),  # the edit it made
    ]
    again.settle(history)
    [taken] = again.report().taken
    assert (taken.revision, taken.outcome) == (4, "pending")  # still being applied
    history[2] = RevisionOutcome(4, action.reason, taken.at + 1, "applied")
    again.settle(history)
    [taken] = again.report().taken
    assert (taken.revision, taken.outcome) == (4, "applied")
    assert _reloaded(clock, path)[1] == taken
    sim.apply(action)  # 5 tasks keep up: nothing more to do
    assert _ticks(sim, again, clock, 12) == []


def test_an_edit_is_pending_until_its_revision_is_applied_and_one_rolled_back_is_not_judged() -> (
    None
):
    clock, sim = ManualClock(), Sim()
    hm = manager(clock)
    action = _until_a_rescale(sim, hm, clock)
    hm.applied(action, 2, None)  # proposed: revision 2 is being applied
    [taken] = hm.report().taken
    assert (taken.revision, taken.outcome) == (2, "pending")
    hm.settle([RevisionOutcome(2, action.reason, taken.at, "applying")])
    assert hm.report().taken == [taken]
    why = "the master restarted during the edit"
    hm.settle([RevisionOutcome(2, action.reason, taken.at, "rolled_back", why)])
    [taken] = hm.report().taken
    assert (taken.revision, taken.outcome) == (2, f"rolled back: {why}")
    # not repeated within its cooldown; the symptom stays, but a rescale that was rolled
    # back is not black-listed: it is decided again, and that one is refused
    [again] = _ticks(sim, hm, clock, 7)
    assert again == action and hm.report().blacklisted == []
    hm.applied(again, 3, None)
    hm.settle([RevisionOutcome(3, action.reason, clock.time(), "refused", "container 0 failed")])
    assert [t.outcome for t in hm.report().taken] == [
        f"rolled back: {why}",
        "failed: container 0 failed",
    ]
    hm.applied(action, 4, None)  # nothing pending: nothing changes
    assert [t.revision for t in hm.report().taken] == [2, 3]
