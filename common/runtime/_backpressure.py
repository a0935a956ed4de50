"""Scoped backpressure: congestion keys, the peers' keys, and which spouts to throttle.

Not global as in Heron: when the buffer towards a local task (or a peer)
passes the high water mark, the stream manager names the spouts whose tuples
can reach it (a *key*, ``"task:7"`` or ``"peer:2"``) and tells every peer
(``Backpressure`` control messages, ahead of data); below the low water mark
it lifts the key. Every stmgr throttles the union of the spouts of every key
it knows, its own and its peers', by no longer reading from those spouts'
sockets; spouts on paths that do not reach a congested task keep running.

A new peer stream starts with ``BackpressureReset`` and the live keys
(``hello``), so a broken stream never leaves a key on forever.

Used from the stmgr's event loop only; time comes from an injected clock.
"""

from __future__ import annotations

import logging
from typing import Protocol

from .._clock import SYSTEM_CLOCK, Clock
from ..wire._control import Backpressure as BpMessage
from ..wire._control import BackpressureReset, ControlMessage

log = logging.getLogger("headwater.stmgr")
BpKey = str


class Throttle(Protocol):
    """What backpressure needs of its stream manager."""

    def broadcast(self, msg: ControlMessage) -> None:
        """Send ``msg`` to every peer, ahead of data."""
        ...

    def throttle(self, spouts: frozenset[str]) -> None:
        """Read from every local spout but these."""
        ...


class Backpressure:
    """The congestion keys this stmgr started and those its peers told it of."""

    def __init__(self, container: int, stmgr: Throttle, clock: Clock = SYSTEM_CLOCK) -> None:
        self.container = container
        self._stmgr = stmgr
        self._clock = clock
        self.local: dict[BpKey, frozenset[str]] = {}  # keys we started -> spouts
        self.sources: dict[BpKey, frozenset[str]] = {}  # "CONTAINER/key" -> spouts, all known
        self.throttled: frozenset[str] = frozenset()
        self._bp_since: float | None = None
        self._throttled_since: float | None = None
        self.bp_time_s = 0.0
        self.throttled_time_s = 0.0

    def on(self, key: BpKey, spouts: frozenset[str]) -> None:
        """A buffer of ours passed its high water mark (``key`` is not on yet)."""
        self.local[key] = spouts
        if self._bp_since is None:
            self._bp_since = self._clock.monotonic()
        log.debug("backpressure on %s: throttling %s", key, sorted(spouts))
        self._stmgr.broadcast(BpMessage(True, f"{self.container}/{key}", tuple(sorted(spouts))))
        self.sources[f"{self.container}/{key}"] = spouts
        self._rethrottle()

    def off(self, key: BpKey) -> None:
        """A buffer of ours fell below its low water mark (or went away)."""
        spouts = self.local.pop(key, None)
        if spouts is None:
            return
        if not self.local and self._bp_since is not None:
            self.bp_time_s += self._clock.monotonic() - self._bp_since
            self._bp_since = None
        self._stmgr.broadcast(BpMessage(False, f"{self.container}/{key}", tuple(sorted(spouts))))
        self.sources.pop(f"{self.container}/{key}", None)
        self._rethrottle()

    def reset(self) -> None:
        """A rollback: lift every key of ours."""
        for key in list(self.local):
            self.off(key)

    def on_peer(self, msg: BpMessage | BackpressureReset) -> None:
        """A peer's key on or off, or the start of a new stream from it."""
        if isinstance(msg, BpMessage):
            if msg.on:
                self.sources[msg.key] = frozenset(msg.spouts)
            else:
                self.sources.pop(msg.key, None)
        else:
            prefix = f"{msg.origin}/"
            for key in [k for k in self.sources if k.startswith(prefix)]:
                del self.sources[key]
        self._rethrottle()

    def hello(self) -> list[ControlMessage]:
        """Sent first on every new peer stream: forget our old keys, here are the live ones."""
        msgs: list[ControlMessage] = [BackpressureReset(self.container)]
        for key, spouts in self.local.items():
            msgs.append(BpMessage(True, f"{self.container}/{key}", tuple(sorted(spouts))))
        return msgs

    def times(self) -> tuple[float, float]:
        """Seconds under backpressure (ours) and throttled (anyone's), until now."""
        now = self._clock.monotonic()
        bp = self.bp_time_s + (now - self._bp_since if self._bp_since is not None else 0.0)
        thr = self.throttled_time_s + (
            now - self._throttled_since if self._throttled_since is not None else 0.0
        )
        return bp, thr

    def _rethrottle(self) -> None:
        throttled = frozenset().union(*self.sources.values()) if self.sources else frozenset()
        if throttled == self.throttled:
            return
        now = self._clock.monotonic()
        if throttled and self._throttled_since is None:
            self._throttled_since = now
        elif not throttled and self._throttled_since is not None:
            self.throttled_time_s += now - self._throttled_since
            self._throttled_since = None
        self.throttled = throttled
        self._stmgr.throttle(throttled)
