"""An action's component rates before it was taken and after it was applied, in the report.

``before``: the component's rates over the window the action was decided on; ``after``:
over the first whole window that begins once it was applied (a rescale's new tasks measured
from their start). The simulated bolt costs 10 ms a record: 2 tasks keep up with 200
records/s, 5 with 300 at 60% busy.
"""

from __future__ import annotations

import json
from pathlib import Path

from headwater.common._clock import ManualClock
from headwater.common.health import HealthPolicy, JsonFileStore, Mode, RevisionOutcome

from ._sim import Sim
from .test_manager import manager
from .test_restart import _reloaded, _ticks, _until_a_rescale

HELD = {"arrival": 200.0, "processed": 200.0, "busy": 1.0, "busy_max": 1.0}
KEPT_UP = {"arrival": 300.0, "processed": 300.0, "busy": 0.6, "busy_max": 0.6}


def test_a_rescale_records_the_rates_before_it_and_a_window_after_it_was_applied() -> None:
    clock, sim = ManualClock(), Sim(parallelism=2, cost=0.01)
    hm = manager(clock)
    action = _until_a_rescale(sim, hm, clock)
    [taken] = hm.report().taken
    assert taken.before == HELD and taken.after is None
    hm.applied(action, 2, None)
    _ticks(sim, hm, clock, 2)  # still pending: not measured
    assert hm.report().taken[0].after is None
    hm.settle([RevisionOutcome(2, action.reason, clock.time(), "applied")])
    sim.apply(action)
    _ticks(sim, hm, clock, 1)  # the new revision's first sample: the window begins there
    assert hm.report().taken[0].after is None
    assert hm.report().to_json()["taken"][0]["measuring"] is True
    _ticks(sim, hm, clock, 1)
    [taken] = hm.report().taken
    assert taken.after == KEPT_UP and taken.before == HELD
    shown = json.loads(json.dumps(hm.report().to_json()))["taken"][0]
    assert (shown["rates_before"], shown["rates_after"]) == (HELD, KEPT_UP)
    assert shown["measuring"] is False
    _ticks(sim, hm, clock, 3)
    assert hm.report().taken[0].after == KEPT_UP  # measured once


def test_an_action_rolled_back_has_no_after() -> None:
    clock, sim = ManualClock(), Sim(parallelism=2, cost=0.01)
    hm = manager(clock)
    action = _until_a_rescale(sim, hm, clock)
    hm.applied(action, 2, None)
    hm.settle([RevisionOutcome(2, action.reason, clock.time(), "rolled_back", "a task failed")])
    _ticks(sim, hm, clock, 3)
    [taken] = hm.report().taken
    assert taken.outcome.startswith("rolled back") and taken.before == HELD
    assert taken.after is None and hm.report().to_json()["taken"][0]["measuring"] is False


def test_a_restarted_manager_measures_the_after_of_what_it_finds_pending_only(
    tmp_path: Path,
) -> None:
    clock, sim = ManualClock(), Sim(parallelism=2, cost=0.01)
    path = tmp_path / "t.json"
    hm = manager(clock, store=JsonFileStore(path))
    action = _until_a_rescale(sim, hm, clock)
    hm.applied(action, 2, None)  # the master stops with it pending
    again, taken = _reloaded(clock, path)
    assert taken.before == HELD and taken.after is None
    again.settle([RevisionOutcome(2, action.reason, clock.time(), "applied")])
    sim.apply(action)
    _ticks(sim, again, clock, 2)
    assert again.report().taken[0].after == KEPT_UP

    # one found applied, its after never measured: too late to tell, it stays unknown
    state = json.loads(path.read_text())
    state["taken"][0]["rates_after"] = None
    path.write_text(json.dumps(state))
    third, taken = _reloaded(clock, path)
    _ticks(sim, third, clock, 3)
    assert third.report().taken[0].outcome == "applied"
    assert third.report().taken[0].after is None
    assert third.report().to_json()["taken"][0]["measuring"] is False  # the console: not measured


def test_a_proposed_action_shows_its_component_s_rates_now() -> None:
    clock, sim = ManualClock(), Sim(parallelism=2, cost=0.01)
    hm = manager(clock, HealthPolicy(mode=Mode.RECOMMEND))
    _ticks(sim, hm, clock, 3)
    [proposed] = hm.report().to_json()["proposed"]
    assert proposed["kind"] == "rescale" and proposed["rates"] == HELD
    hm.set_policy(HealthPolicy(mode=Mode.OFF))
    assert hm.report().to_json()["proposed"] == []
