"""A load that rises and falls twice (issue 35), on the simulated topology: the guards' part.

The shape of ``python -m bench health``'s ``rise-fall`` scenario: a bolt of 15 ms a record
(one task keeps up with about 67 records/s) on 1 task, fed 30 records/s, then 80, 30, 80,
30. Each rise needs 2 tasks (DS2: 80 / (67 x 0.7) = 1.7), each fall 1 (30 / 47 = 0.6).
"""

from __future__ import annotations

import itertools

from headwater.common._clock import ManualClock
from headwater.common.health import Action, HealthManager, HealthPolicy, Mode

from ._sim import Sim

SHAPE = ((60, 30.0), (140, 80.0), (150, 30.0), (140, 80.0), (110, 30.0))  # s, records/s


class Store:
    state: dict[str, object] | None = None

    def load(self) -> dict[str, object] | None:
        return self.state

    def save(self, state: dict[str, object]) -> None:
        self.state = state


def _run(policy: HealthPolicy, shape: tuple[tuple[int, float], ...]) -> list[tuple[float, int]]:
    """Ticks every second through ``shape``; each rescale as (seconds from the start, to)."""
    clock, sim = ManualClock(), Sim(parallelism=1, cost=0.015)
    hm = HealthManager("t", policy, Store(), clock.monotonic, clock.time)
    start, done = sim.at, []
    for length, rate in shape:
        for _ in range(length):
            sample = sim.step(rate, dt=1.0)
            clock.advance_to(sample.at)
            actions: list[Action] = hm.tick(sample)
            for a in actions:
                assert a.kind == "rescale" and a.parallelism is not None, a
                done.append((sample.at - start, a.parallelism))
                sim.apply(a)
                hm.applied(a, sim.revision, None)
    return done


def _reversals(done: list[tuple[float, int]], window: float) -> list[object]:
    steps, current = [], 1
    for at, to in done:
        steps.append((at, to > current))
        current = to
    return [(a, b) for a, b in itertools.pairwise(steps) if a[1] != b[1] and b[0] - a[0] < window]


def test_the_benchs_policy_takes_one_rescale_per_change_and_reverses_none() -> None:
    policy = HealthPolicy(mode=Mode.AUTO, max_parallelism=4, stabilization_s=60, cooldown_s=30)
    done = _run(policy, SHAPE)
    assert [to for _, to in done] == [2, 1, 2, 1]
    rises, falls = (60, 350), (200, 490)
    ups, downs = [at for at, _ in done[::2]], [at for at, _ in done[1::2]]
    assert all(0 < up - rise <= 10 for up, rise in zip(ups, rises, strict=True)), done
    # a scale down once over-provisioned was seen for the 60 s of stabilization
    assert all(60 <= down - fall <= 70 for down, fall in zip(downs, falls, strict=True)), done
    assert _reversals(done, policy.stabilization_s) == []


def test_the_defaults_hold_a_rise_back_that_comes_within_120_s_of_a_scale_down() -> None:
    # the same shape with the default windows (stabilization 120 s, cooldown 60 s): the first
    # fall's scale down comes 120 s in, so the second rise, 30 s later, waits out the window
    # (94 s held back), and the second fall's is not due before the 10 minutes are over
    done = _run(HealthPolicy(mode=Mode.AUTO), SHAPE)
    assert [to for _, to in done] == [2, 1, 2]
    assert _reversals(done, 120.0) == []
    down, up = done[1][0], done[2][0]
    assert 320 <= down <= 330 and up >= down + 120, done


# no black-list: the scale up's judging would hold the next one back for 10 minutes itself
CATCH_UP_POLICY = HealthPolicy(
    mode=Mode.AUTO, max_parallelism=4, stabilization_s=60, cooldown_s=5, blacklist_s=0
)


def _with_catch_up(policy: HealthPolicy, after: list[float]) -> list[tuple[float, int]]:
    """80 records/s on 1 task until it is rescaled, then ``after`` (one rate a second): what
    the sources emit, the switch's backlog drained first."""
    clock, sim = ManualClock(), Sim(parallelism=1, cost=0.015)
    hm = HealthManager("t", policy, Store(), clock.monotonic, clock.time)
    start, rates = sim.at, iter(after)
    done: list[tuple[float, int]] = []
    for _ in range(len(after) + 60):
        rate = next(rates, 80.0) if done else 80.0
        sample = sim.step(rate, dt=1.0)
        clock.advance_to(sample.at)
        for a in hm.tick(sample):
            assert a.parallelism is not None
            done.append((sample.at - start, a.parallelism))
            sim.apply(a)
            hm.applied(a, sim.revision, None)
    return done


def test_the_catch_up_after_a_scale_up_is_not_read_as_more_demand() -> None:
    # 2 tasks drain the backlog as fast as they can for 12 s (both 100% busy, the sources
    # emitting 133 records/s: DS2 reads 3), then keep up with 80: the one scale up stands
    # (it took 1 -> 2 -> 3 before)
    done = _with_catch_up(CATCH_UP_POLICY, [140.0] * 12)
    assert [to for _, to in done] == [2], done


def test_a_load_that_keeps_rising_is_scaled_up_again_once_the_window_has_passed() -> None:
    # 160 records/s after the first scale up, for good: loaded on every tick since, so the
    # second scale up waits out the 60 s window (DS2: 160 / (67 x 0.7) -> 4)
    done = _with_catch_up(CATCH_UP_POLICY, [160.0] * 90)
    assert [to for _, to in done] == [2, 4], done
    assert 60 <= done[1][0] - done[0][0] <= 62, done
