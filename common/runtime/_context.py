"""The context an instance gives its component: ``headwater.Context`` over an ``Instance``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ..api import DEFAULT_STREAM, Topology, Tuple
from ..state import KeyedState, State
from ..wire._control import ControlMessage, control_frame
from ._outputs import Outputs, TaskCounters
from ._task_state import TaskState


class Contextual(Protocol):
    """What a component's context reads and acts through."""

    @property
    def task(self) -> int: ...

    @property
    def component(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def topology(self) -> Topology: ...

    @property
    def conf(self) -> Mapping[str, Any]: ...

    @property
    def ids(self) -> dict[str, list[int]]: ...

    @property
    def outputs(self) -> Outputs: ...

    @property
    def store(self) -> TaskState: ...

    @property
    def counts(self) -> TaskCounters: ...

    def send(self, frame: bytes) -> None: ...


MAX_USER_COUNTERS = 256
MAX_COUNTER_NAME = 100
OTHER_COUNTER = "_other"  # the counts of names past MAX_USER_COUNTERS


class InstanceContext:
    """The runtime as a component sees it.

    It implements ``headwater.Context``, and ``RuntimeContext`` for the
    runtime's own components (a channel to the stmgr). Executor thread only.
    """

    def __init__(self, instance: Contextual) -> None:
        self._i = instance

    @property
    def task_id(self) -> int:
        return self._i.task

    @property
    def component(self) -> str:
        return self._i.component

    @property
    def component_index(self) -> int:
        return self._i.index

    @property
    def topology_name(self) -> str:
        return self._i.topology.name

    @property
    def config(self) -> Mapping[str, Any]:
        return self._i.conf

    @property
    def topology(self) -> Topology:
        return self._i.topology

    @property
    def log(self) -> logging.Logger:
        return logging.getLogger(f"headwater.user.{self._i.component}")

    def component_tasks(self, component: str) -> list[int]:
        return list(self._i.ids.get(component, []))

    def emit(
        self,
        values: Sequence[Any],
        stream: str = DEFAULT_STREAM,
        *,
        tup_id: Any = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        return self._i.outputs.emit(values, stream, tup_id, anchors, direct_task, need_task_ids)

    def emitter(self, stream: str = DEFAULT_STREAM) -> Callable[[list[Any]], None]:
        return self._i.outputs.emitter_for(stream)

    def emitter_all(self, stream: str = DEFAULT_STREAM) -> Callable[[list[list[Any]]], None]:
        return self._i.outputs.emitter_all_for(stream)

    def emitter_columns(self, stream: str = DEFAULT_STREAM) -> Callable[[list[list[Any]]], None]:
        return self._i.outputs.emitter_columns_for(stream)

    def ack(self, tup: Tuple) -> None:
        self._i.outputs.ack(tup)

    def fail(self, tup: Tuple) -> None:
        self._i.outputs.fail(tup)

    @property
    def state(self) -> State:
        return self._i.store.state

    def keyed_state(self, name: str) -> KeyedState:
        return self._i.store.keyed_state(name)

    def keyed_names(self) -> list[str]:
        return list(self._i.store.keyed)

    def system(self, msg: ControlMessage) -> None:
        """Send a control message to the stmgr (runtime components only)."""
        self._i.send(control_frame(msg, src=self._i.task))

    def system_frame(self, frame: bytes) -> None:
        """Send a ready frame to the stmgr (runtime components only)."""
        self._i.send(frame)

    def flush(self) -> None:
        """Send everything emitted so far now, in order (before a move's fence)."""
        self._i.outputs.emitter.flush_all()

    def incr(self, counter: str, by: int = 1) -> None:
        """Add ``by`` to the user counter ``counter`` (reported with the task's metrics).

        A task keeps at most ``MAX_USER_COUNTERS`` names (each cut to ``MAX_COUNTER_NAME``
        characters); counts under further names go to ``OTHER_COUNTER``, so that a counter
        per device or per key cannot grow every report, /metrics and the console without end.
        """
        c = self._i.counts.user_counters
        counter = counter[:MAX_COUNTER_NAME]
        if counter not in c and len(c) >= MAX_USER_COUNTERS:
            counter = OTHER_COUNTER
        c[counter] = c.get(counter, 0) + by

    def retry_record(
        self, component: str, attempt: Callable[[], Any], error: Exception, record: Any
    ) -> bool:
        return self._i.outputs.retry(component, attempt, error, record)

    def report_dead_letter(self, row: Sequence[Any], origin: str) -> None:
        """Report a dead letter made elsewhere (an edge domain's, relayed to the cloud) to
        ``/exceptions``, bounded as this instance's own (runtime components only)."""
        component, reason, tb, record = row
        self._i.outputs.report_dead_letter(f"{component} ({origin})", reason, tb, record, sink=True)
