"""One retry policy: exponential delays with full jitter, capped, reset on success.

Every loop that tries again (a node reattaching, a container restarting an
instance, a stream manager reaching a peer, an uplink reconnecting) holds a
``Backoff`` and asks it how long to wait.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryPolicy:
    """How delays grow: from ``initial`` by ``factor`` up to ``maximum``.

    With ``jitter`` the delay is drawn uniformly from [0, current] (AWS's "full
    jitter"), so many clients that lost the same peer do not return in step.
    """

    initial: float = 0.2
    maximum: float = 10.0
    factor: float = 2.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum or self.factor < 1:
            raise ValueError(f"a retry policy needs 0 < initial <= maximum and factor >= 1: {self}")

    def start(self, rng: random.Random | None = None) -> Backoff:
        return Backoff(self, rng)


@dataclass
class Backoff:
    """The delays of one retrying loop; ``reset`` after a success."""

    policy: RetryPolicy
    rng: random.Random | None = None
    _current: float = field(init=False)
    failures: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._current = self.policy.initial
        if self.rng is None:
            self.rng = random.Random()

    def next_delay(self) -> float:
        """The delay before the next try; each call grows the next one."""
        assert self.rng is not None
        d = self.rng.uniform(0, self._current) if self.policy.jitter else self._current
        self._current = min(self._current * self.policy.factor, self.policy.maximum)
        self.failures += 1
        return d

    def reset(self) -> None:
        self._current = self.policy.initial
        self.failures = 0
