"""The tuple handed to ``Bolt.process``."""

from __future__ import annotations

from typing import Any

TICK_COMPONENT = "__system"
TICK_STREAM = "__tick"


class Tuple:
    """One record: positional ``values`` plus where it came from.

    Field order matches heronpy's HeronTuple (id, component, stream, task,
    values, creation_time, roots). ``roots`` carries acking bookkeeping and is
    opaque to user code.
    """

    __slots__ = (
        "_ack_val",
        "component",
        "creation_time",
        "id",
        "roots",
        "stream",
        "task",
        "values",
    )

    def __init__(
        self,
        id: str | None,
        component: str,
        stream: str,
        task: int,
        values: list[Any],
        creation_time: float,
        roots: list[int] | None = None,
    ) -> None:
        self.id = id
        self.component = component
        self.stream = stream
        self.task = task
        self.values = values
        self.creation_time = creation_time
        self.roots = roots
        self._ack_val = 0

    def __repr__(self) -> str:
        return (
            f"Tuple(component={self.component!r}, stream={self.stream!r}, "
            f"task={self.task}, values={self.values!r})"
        )

    @property
    def is_tick(self) -> bool:
        return self.component == TICK_COMPONENT and self.stream == TICK_STREAM
