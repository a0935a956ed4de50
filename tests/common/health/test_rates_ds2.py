from __future__ import annotations

from headwater.common.health import ComponentInfo, Sample, TaskSample
from headwater.common.health._ds2 import demand, targets, topological
from headwater.common.health._rates import rates

COMPONENTS = {
    "src": ComponentInfo("src", 1, source=True),
    "split": ComponentInfo("split", 2, (("src", "shuffle"),)),
    "count": ComponentInfo("count", 2, (("split", "fields"),)),
}


def task(t: int, c: str, n: float, out: float, busy_s: float, held_ms: float = 0.0) -> TaskSample:
    return TaskSample(
        t, c, executed=n, emitted=out, received=n, busy_ns=busy_s * 1e9, backpressure_ms=held_ms
    )


def sample(at: float, tasks: list[TaskSample]) -> Sample:
    return Sample("t", 1, at, COMPONENTS, {t.task: t for t in tasks})


def test_rates_per_task_and_component() -> None:
    before = sample(
        0.0, [task(1, "src", 0, 0, 0), task(2, "split", 0, 0, 0), task(3, "split", 0, 0, 0)]
    )
    after = sample(
        10.0,
        [
            task(1, "src", 1000, 1000, 1),
            task(2, "split", 500, 1500, 5, 2000),
            task(3, "split", 500, 1500, 2.5),
        ],
    )
    r = rates(before, after)
    [t2, t3] = r["split"].tasks
    assert (t2.arrival, t2.processed, t2.emitted, t2.busy, t2.backpressure) == (
        50.0,
        50.0,
        150.0,
        0.5,
        0.2,
    )
    assert t2.true_processing == 100.0 and t3.true_processing == 200.0 and t2.true_output == 300.0
    split = r["split"]
    assert split.processed == 100.0 and split.selectivity == 3.0 and split.busy_max == 0.5
    assert split.true_processing is not None and abs(split.true_processing - 1000 / 7.5) < 1e-9
    assert "count" not in r  # no task of it in both samples


def test_a_task_that_restarted_appeared_or_left_is_skipped_for_the_interval() -> None:
    before = sample(
        0.0,
        [task(2, "split", 100, 100, 1), task(3, "split", 100, 100, 1), task(4, "split", 1, 1, 0)],
    )
    after = sample(
        10.0,
        [task(2, "split", 50, 50, 0.5), task(3, "split", 200, 200, 2), task(5, "split", 9, 9, 1)],
    )
    assert [t.task for t in rates(before, after)["split"].tasks] == [3]
    assert rates(after, after) == {}  # no time went by


def test_demand_is_scaled_up_by_the_time_held_back_and_capped() -> None:
    assert demand(200.0, 0.0) == 200.0
    assert abs(demand(200.0, 1 / 3) - 300.0) < 1e-9
    assert demand(200.0, 0.99) == 800.0 and demand(200.0, 1.0) == 800.0


def test_ds2_targets_follow_selectivity_in_topological_order() -> None:
    assert topological(COMPONENTS) == ["src", "split", "count"]
    before = sample(
        0.0,
        [task(i, c, 0, 0, 0) for i, c in ((1, "src"), (2, "split"), (3, "split"), (4, "count"))],
    )
    after = sample(
        10.0,
        [
            task(1, "src", 1000, 1000, 1),  # 100/s, the sources held back 20% of the time
            task(2, "split", 1000, 3000, 5, 2000),  # selectivity 3, 200 per busy second
            task(3, "split", 0, 0, 0),
            task(4, "count", 3000, 0, 10),  # 300 per busy second
        ],
    )
    r = rates(before, after)
    got = targets(COMPONENTS, r, 0.5)
    # demand 100 / 0.8 = 125; split: 125 / (200 * 0.5) -> 2; count: 375 / (300 * 0.5) -> 3
    assert got == {"src": 1, "split": 2, "count": 3}


def clocked(t: int, c: str, n: float, busy_s: float, uptime_s: float) -> TaskSample:
    return TaskSample(
        t, c, executed=n, emitted=n, received=n, busy_ns=busy_s * 1e9, uptime_ns=uptime_s * 1e9
    )


def test_a_tasks_rates_are_over_its_own_clock_not_the_samplers() -> None:
    # sampled 5 s apart, but the reports read were 6 s apart by the tasks' clocks (one read
    # 2 s old, the next fresh): 60/s over 6 s, not 72/s over 5 s; the source alike
    before = sample(0.0, [clocked(1, "src", 0, 0.1, 10.0), clocked(2, "split", 0, 0, 10.0)])
    after = sample(5.0, [clocked(1, "src", 360, 0.3, 16.0), clocked(2, "split", 360, 4.5, 16.0)])
    r = rates(before, after)
    [t] = r["split"].tasks
    assert (t.interval_s, t.processed, t.busy) == (6.0, 60.0, 0.75)
    assert t.true_processing == 80.0 and r["split"].true_processing == 80.0
    assert r["src"].emitted == 60.0
    # demand 60 over 80 per busy second at 0.4: 2 tasks (72/s over the samples' 5 s: 3)
    assert targets(COMPONENTS, r, 0.4)["split"] == 2


def test_without_a_tasks_clock_the_samples_interval_is_used_and_no_report_no_rates() -> None:
    before = sample(0.0, [clocked(2, "split", 0, 0, 0.0)])
    after = sample(5.0, [clocked(2, "split", 100, 1, 0.0)])
    [t] = rates(before, after)["split"].tasks
    assert (t.interval_s, t.processed) == (5.0, 20.0)
    stale = sample(5.0, [clocked(2, "split", 0, 0, 10.0)])  # the same report read twice
    assert rates(sample(0.0, [clocked(2, "split", 0, 0, 10.0)]), stale) == {}
