from __future__ import annotations

from dataclasses import replace

from headwater.common.health import ComponentInfo, Sample, TaskSample
from headwater.common.health._ds2 import demand, targets, topological
from headwater.common.health._rates import rates, task_rates

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


def test_a_task_that_sent_no_report_is_silent_and_its_component_is_not_diagnosed() -> None:
    """As seen with real daemons: a slow task in one long frame (a replay after a rollback)
    reports nothing for 14 s; read as idle beside its held-back sibling, its component
    looked over-provisioned."""
    from headwater.common.health._diagnose import diagnose

    comps = {"src": COMPONENTS["src"], "split": COMPONENTS["split"]}

    def two(at: float, n2: float, busy2: float, n3: float, busy3: float) -> Sample:
        tasks = [task(1, "src", 90 * at, 90 * at, 0.01 * at)]
        tasks += [task(2, "split", n2, n2, busy2), task(3, "split", n3, n3, busy3)]
        return Sample("t", 1, at, comps, {t.task: t for t in tasks})

    before, silent = two(100.0, 343, 7.12, 1166, 12.35), two(105.0, 343, 7.12, 1200, 12.7)
    r = rates(before, silent)
    assert [t.silent for t in r["split"].tasks] == [True, False]
    assert diagnose(comps, r, {"split": 1}, 0.7) == []  # not over-provisioned
    # the same, once the task reported (busy 1.2 s more): its sibling's idleness shows
    reported = two(105.0, 343, 8.32, 1200, 12.7)
    r = rates(before, reported)
    assert [t.silent for t in r["split"].tasks] == [False, False]
    assert [d.kind for d in diagnose(comps, r, {"split": 1}, 0.7)] == ["over-provisioned"]


def test_a_task_read_at_its_own_time_is_measured_over_its_own_interval() -> None:
    before = TaskSample(7, "split", executed=0, busy_ns=0, at=100.0)
    after = TaskSample(7, "split", executed=80, busy_ns=2e9, at=104.0)
    r = task_rates(before, after, 5.0)  # the samples 5 s apart, its agent's reports 4 s
    assert r is not None and (r.processed, r.busy, r.interval_s) == (20.0, 0.5, 4.0)
    assert task_rates(before, replace(before, executed=9), 5.0) is None  # the same report


def test_an_edge_component_on_two_agents_needs_its_share_of_the_demand_on_each() -> None:
    comps = {
        "src": ComponentInfo("src", 1, source=True, edge=True),
        "work": ComponentInfo("work", 1, (("src", "shuffle"),), edge=True, copies=2),
    }
    before = Sample(
        "t",
        1,
        0.0,
        comps,
        {1: TaskSample(1, "src"), 2: TaskSample(2, "work"), 3: TaskSample(3, "work")},
    )
    after = Sample(
        "t",
        1,
        10.0,
        comps,
        {
            1: TaskSample(1, "src", executed=1000, emitted=1000),
            2: TaskSample(2, "work", executed=500, busy_ns=10e9),
            3: TaskSample(3, "work", executed=500, busy_ns=10e9),
        },
    )
    measured = rates(before, after)
    # 100 records/s in all, 50 on each agent, 50 a task: 2 tasks each keep up at 70 %
    assert targets(comps, measured, 0.7) == {"src": 1, "work": 2}
    assert targets(comps, measured, 0.7, {"src": 150.0}) == {"src": 1, "work": 3}


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


def test_without_a_tasks_clock_the_samples_interval_is_used_and_no_report_is_silent() -> None:
    before = sample(0.0, [clocked(2, "split", 0, 0, 0.0)])
    after = sample(5.0, [clocked(2, "split", 100, 1, 0.0)])
    [t] = rates(before, after)["split"].tasks
    assert (t.interval_s, t.processed) == (5.0, 20.0)
    stale = sample(5.0, [clocked(2, "split", 0, 0, 10.0)])  # the same report read twice
    [t] = rates(sample(0.0, [clocked(2, "split", 0, 0, 10.0)]), stale)["split"].tasks
    assert t.silent  # no report in between: no rates known, its component not diagnosed
