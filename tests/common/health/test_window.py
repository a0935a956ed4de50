"""Rates over a window: counters read every second move by 0, 1 or 2 seconds' worth."""

from __future__ import annotations

from dataclasses import replace

from headwater.common._clock import ManualClock
from headwater.common.health import (
    ComponentInfo,
    HealthManager,
    HealthPolicy,
    Mode,
    Sample,
    TaskSample,
)
from headwater.common.health._manager import RATE_WINDOW_S

from .test_manager import MemoryStore

RATE, COST = 35.0, 0.015  # each of two tasks: 35 records/s at 15 ms each (busy 52%)
COMPONENTS = {
    "src": ComponentInfo("src", 1, source=True),
    "work": ComponentInfo("work", 2, (("src", "fields"),)),
}


def _task(task: int, component: str, seconds: float, rate: float, cost: float) -> TaskSample:
    n = rate * seconds
    return TaskSample(task, component, n, n, n, n * cost * 1e9)


def _sample(k: int) -> Sample:
    """Second ``k``: task 10's last report is a second late on odd seconds, task 11's on even
    ones (each then catches up): a second apart, one of them reads idle, the other doubled."""
    late10, late11 = k % 2, 1 - k % 2
    tasks = {
        1: _task(1, "src", k, 2 * RATE, 1e-5),
        10: _task(10, "work", k - late10, RATE, COST),
        11: _task(11, "work", k - late11, RATE, COST),
    }
    return Sample("t", 1, float(k), COMPONENTS, tasks)


def test_counters_read_a_second_apart_give_no_false_skew_nor_rescale() -> None:
    clock = ManualClock()
    hm = HealthManager("t", HealthPolicy(mode=Mode.AUTO), MemoryStore(), clock.monotonic)
    for k in range(1, 30):
        clock.advance_to(1000.0 + k)
        assert hm.tick(_sample(k)) == [], f"second {k}"
        assert hm.report().diagnoses == [], f"second {k}: {hm.report().diagnoses}"


def test_a_loop_that_samples_less_often_uses_its_previous_sample() -> None:
    hm = HealthManager("t", HealthPolicy(mode=Mode.AUTO), MemoryStore(), ManualClock().monotonic)
    step = RATE_WINDOW_S
    s1 = Sample("t", 1, 100.0, COMPONENTS, {1: _task(1, "src", 10, 2 * RATE, 1e-5)})
    s2 = Sample("t", 1, 100.0 + step, COMPONENTS, {1: _task(1, "src", 20, 2 * RATE, 1e-5)})
    assert hm.tick(s1) == [] and hm._base(s2) is s1
    assert [s.at for s in hm._samples] == [100.0, 100.0 + step]


def test_rates_never_span_an_edit() -> None:
    hm = HealthManager("t", HealthPolicy(mode=Mode.AUTO), MemoryStore(), ManualClock().monotonic)
    s1 = Sample("t", 1, 100.0, COMPONENTS, {1: _task(1, "src", 10, 2 * RATE, 1e-5)})
    s2 = Sample("t", 2, 110.0, COMPONENTS, {1: _task(1, "src", 20, 2 * RATE, 1e-5)})
    s3 = Sample("t", 2, 116.0, COMPONENTS, {1: _task(1, "src", 26, 2 * RATE, 1e-5)})
    assert hm.tick(s1) == [] and hm._base(s2) is None and hm._base(s3) is s2


def test_a_task_in_a_long_frame_is_not_read_idle_beside_its_siblings() -> None:
    """An instance reports between frames: the hot task of a skew, in a frame of 5 s, sends
    nothing for as long (its counters stand still), while a cold sibling reports. Read as
    idle it made the sibling look hot (a false skew naming a cold key); its component is not
    diagnosed until every task has reported again, and then the skew is the hot task's."""
    clock = ManualClock()
    hm = HealthManager("t", HealthPolicy(mode=Mode.AUTO), MemoryStore(), clock.monotonic)
    components = {
        "src": ComponentInfo("src", 1, source=True),
        "work": ComponentInfo("work", 3, (("src", "fields"),)),
    }

    def sample(at: float, hot: float, cold: float, idle: float) -> Sample:
        # hot: task 10's seconds of work reported so far (50 records/s), cold: task 11's (6/s)
        return Sample(
            "t",
            1,
            at,
            components,
            {
                1: _task(1, "src", at, 56.0, 1e-5),
                10: replace(_task(10, "work", hot, 50.0, 0.02), hot_keys=(("k0", 1.0),)),
                11: replace(_task(11, "work", cold, 6.0, 0.02), hot_keys=(("k2", 1.0),)),
                12: _task(12, "work", idle, 0.001, 0.02),
            },
        )

    clock.advance_to(1000.0)
    assert hm.tick(sample(0.0, 0.0, 0.0, 0.0)) == []
    clock.advance_to(1005.0)
    hm.tick(sample(5.0, 0.0, 5.0, 5.0))  # task 10 in its first frame: nothing reported yet
    assert hm.report().diagnoses == []
    clock.advance_to(1010.0)
    actions = hm.tick(sample(10.0, 10.0, 10.0, 10.0))
    [d] = hm.report().diagnoses
    assert (d.kind, d.tasks, d.evidence["hot_keys"][0]["key"]) == ("skew", (10,), "k0")
    assert [a.kind for a in actions] == ["report"]
