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
