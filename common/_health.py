"""A node's health: ``ok``, ``degraded`` or ``failed``, with the reasons.

Every part of a node that can stop progress without losing data (the MQTT
broker out of reach, the ingest writer's disk full, checkpoints failing, a
component crash-looping) sets a reason under a key of its own while the
fault lasts and clears it when the fault is gone. The node's state is the
worst level among its reasons. The node reports it with its status, so the
master's ``GET /api/v1/nodes`` and ``headwater nodes`` show it, and an agent's
own ``/status`` shows it with the link down.

>>> h = Health("agent-1")
>>> h.set("mqtt", DEGRADED, "broker 127.0.0.1:1883 unreachable")
>>> h.state, h.reasons()
('degraded', ['mqtt: broker 127.0.0.1:1883 unreachable'])
>>> h.clear("mqtt")
>>> h.state
'ok'

Threadsafe: paho's thread, the ingest writer and the event loop all report.
A reason is logged once when it appears or changes (a warning, an error for
``failed``) and once when it clears, never on every repeat.
"""

from __future__ import annotations

import enum
import logging
import threading

log = logging.getLogger("headwater.health")


class Level(enum.IntEnum):
    OK = 0
    DEGRADED = 1  # progress goes on, or stops without losing anything (a broker away)
    FAILED = 2  # the node cannot do its work until someone or something fixes it

    @property
    def label(self) -> str:
        return self.name.lower()


OK, DEGRADED, FAILED = Level.OK, Level.DEGRADED, Level.FAILED


class Health:
    """The reasons a node is not ``ok``, keyed by the part that reports them."""

    def __init__(self, node: str = "") -> None:
        self.node = node
        self._lock = threading.Lock()
        self._reasons: dict[str, tuple[Level, str]] = {}

    def set(self, key: str, level: Level, message: str) -> None:
        """Report a fault under ``key`` (replacing what ``key`` said before)."""
        with self._lock:
            changed = self._reasons.get(key) != (level, message)
            self._reasons[key] = (level, message)
        if changed:
            log.log(
                logging.ERROR if level >= FAILED else logging.WARNING,
                "%s %s: %s",
                level.label,
                key,
                message,
            )

    def clear(self, key: str) -> None:
        """The fault under ``key`` is gone."""
        with self._lock:
            gone = self._reasons.pop(key, None)
        if gone is not None:
            log.info("recovered %s (was: %s)", key, gone[1])

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._reasons

    @property
    def level(self) -> Level:
        with self._lock:
            return max((lv for lv, _ in self._reasons.values()), default=OK)

    @property
    def state(self) -> str:
        return self.level.label

    def reasons(self) -> list[str]:
        """``key: message`` per fault, worst first."""
        with self._lock:
            items = sorted(self._reasons.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return [f"{key}: {message}" for key, (_, message) in items]
