"""What a stream manager tells the container that owns it: the ``StreamManagerHooks`` port.

The stream manager routes; what an event means (a snapshot to store, an
instance to restore, a crash to report, an outbox batch to ship) is the
container's business. The container passes an object with these methods
when it builds its stream manager; ``NoHooks`` ignores everything (tests,
and containers without a use for an event subclass it).
"""

from __future__ import annotations

from typing import Protocol

from ..wire._control import ControlMessage, DeadLetterReport, ExceptionReport

Metric = tuple[str, str, float]  # (name, label, value)


class StreamManagerHooks(Protocol):
    def on_hello(self, task: int) -> None:
        """An instance connected and said hello."""
        ...

    def on_state(self, task: int, checkpoint: int, blob: bytes) -> None:
        """An instance's snapshot for ``checkpoint`` arrived."""
        ...

    def on_report(self, report: ExceptionReport | DeadLetterReport) -> None:
        """User code raised (the task goes down) or a record was dead-lettered."""
        ...

    def on_system(self, msg: ControlMessage) -> None:
        """A runtime component's control message (log offsets committed, uplink feedback)."""
        ...

    def on_outbox(self, task: int, component: str, seq: int, rows: bytes) -> bool:
        """An edge outbox sink published a batch; False if this container has no uplink."""
        ...

    def extra_metrics(self) -> list[Metric]:
        """Metrics the container adds to the stream manager's."""
        ...


class NoHooks:
    """Hooks that ignore every event."""

    def on_hello(self, task: int) -> None:
        pass

    def on_state(self, task: int, checkpoint: int, blob: bytes) -> None:
        pass

    def on_report(self, report: ExceptionReport | DeadLetterReport) -> None:
        pass

    def on_system(self, msg: ControlMessage) -> None:
        pass

    def on_outbox(self, task: int, component: str, seq: int, rows: bytes) -> bool:
        return False

    def extra_metrics(self) -> list[Metric]:
        return []
