"""``TestContext``: the component contract's ``Context``, in memory, recording what it is told.

Hand it to a component's ``open`` and call the component directly; afterwards read
what it emitted (per stream), acked, failed, counted and dead-lettered. Given a
topology, it knows the component's task ids and merged config and routes each emit
with the runtime's groupings (so ``need_task_ids`` gives the real destinations and an
undeclared stream is the runtime's ``EmitError``); without one it is a lone task 1.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from headwater.common.api import DEAD_LETTERS, DEFAULT_STREAM, RuntimeConfig, Topology, Tuple
from headwater.common.api._dead_letters import Retry
from headwater.common.api._state import KeyedState, State
from headwater.common.plan import task_ids
from headwater.common.plan._routing import Router
from headwater.common.wire import column_rows
from headwater.common.wire._control import ControlMessage


class Hooks(Protocol):
    """What the in-process runner (``LocalRun``) is told of a context's calls."""

    def emitted(self, ctx: TestContext, record: Emitted, dests: list[int]) -> None: ...
    def acked(self, ctx: TestContext, tup: Tuple) -> None: ...
    def failed(self, ctx: TestContext, tup: Tuple) -> None: ...
    def dead_lettered(self, ctx: TestContext, row: list[Any]) -> None: ...


@dataclass(frozen=True)
class Emitted:
    """One ``emit`` call, as the component made it."""

    stream: str
    values: list[Any]
    tup_id: Any = None
    anchors: tuple[Tuple, ...] = ()
    direct_task: int | None = None


class TestContext:
    """A ``headwater.Context`` for unit tests (see the module docstring).

    ``config`` adds to (or, without a topology, is) the component's config;
    ``max_retries`` defaults to ``topology.record.max.retries`` (3).
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        topology: Topology | None = None,
        component: str = "test",
        *,
        index: int = 0,
        config: Mapping[str, Any] | None = None,
        state: State | None = None,
        log: logging.Logger | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self._topology = topology
        self._component = component
        self._index = index
        if topology is not None:
            self._ids = task_ids(topology)
            merged = dict(topology.merged_config(component))
        else:
            self._ids = {component: list(range(1, index + 2))}
            merged = {}
        merged.update(config or {})
        self._config = merged
        self._task = self._ids[component][index]
        self._log = log or logging.getLogger(f"headwater.user.{component}")
        self._hooks = hooks
        self._router = (
            Router(topology, component, self, seed=self._task * 7919, ids=self._ids)
            if topology is not None
            else None
        )
        rc = RuntimeConfig.from_mapping(merged)
        self.state = state if state is not None else State()
        self.keyed: dict[str, KeyedState] = {}
        self.emitted: list[Emitted] = []
        self.acked: list[Tuple] = []
        self.failed: list[Tuple] = []
        self.counters: dict[str, int] = {}
        self.dead_letters: list[list[Any]] = []  # [component, reason, traceback, record]
        self.system_messages: list[ControlMessage] = []
        self.system_frames: list[bytes] = []
        self.reported_dead_letters: list[tuple[list[Any], str]] = []  # (row, origin)
        self.retry = Retry(rc.record_max_retries, self._dead_letter, self._log)
        self.current: Tuple | None = None  # the runner: the tuple being processed

    # -- who and where ---------------------------------------------------------------
    @property
    def task_id(self) -> int:
        return self._task

    @property
    def component(self) -> str:
        return self._component

    @property
    def component_index(self) -> int:
        return self._index

    @property
    def topology_name(self) -> str:
        return self._topology.name if self._topology is not None else "test"

    @property
    def config(self) -> Mapping[str, Any]:
        return self._config

    @property
    def topology(self) -> Topology:
        if self._topology is None:
            raise AttributeError("this TestContext was made without a topology: pass one")
        return self._topology

    @property
    def log(self) -> logging.Logger:
        return self._log

    def component_tasks(self, component: str) -> list[int]:
        return list(self._ids.get(component, []))

    # -- output ----------------------------------------------------------------------
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
        record = Emitted(stream, list(values), tup_id, tuple(anchors or ()), direct_task)
        dests: list[int] = []
        if self._router is not None:
            for select in self._router.selectors(stream):
                dests.extend(select(record.values, direct_task))
        self.emitted.append(record)
        if self._hooks is not None:
            self._hooks.emitted(self, record, dests)
        return dests if need_task_ids else None

    def emitter(self, stream: str = DEFAULT_STREAM) -> Callable[[list[Any]], None]:
        emit = self.emit

        def bound(values: list[Any]) -> None:
            emit(values, stream)

        return bound

    def emitter_all(self, stream: str = DEFAULT_STREAM) -> Callable[[list[list[Any]]], None]:
        emit = self.emit

        def bound(records: list[list[Any]]) -> None:
            for values in records:
                emit(values, stream)

        return bound

    def emitter_columns(self, stream: str = DEFAULT_STREAM) -> Callable[[list[list[Any]]], None]:
        emit = self.emit

        def bound(cols: list[list[Any]]) -> None:
            for values in column_rows(cols):  # the runtime's checks, before any leaves
                emit(values, stream)

        return bound

    def values(self, stream: str = DEFAULT_STREAM) -> list[list[Any]]:
        """The values of every tuple emitted on ``stream``, in order."""
        return [e.values for e in self.emitted if e.stream == stream]

    def ack(self, tup: Tuple) -> None:
        self.acked.append(tup)
        if self._hooks is not None:
            self._hooks.acked(self, tup)

    def fail(self, tup: Tuple) -> None:
        self.failed.append(tup)
        if self._hooks is not None:
            self._hooks.failed(self, tup)

    # -- state and metrics -----------------------------------------------------------
    def keyed_state(self, name: str) -> KeyedState:
        if name not in self.keyed:
            self.keyed[name] = KeyedState()
        return self.keyed[name]

    def keyed_names(self) -> list[str]:
        return list(self.keyed)

    def incr(self, counter: str, by: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + by

    # -- poison records --------------------------------------------------------------
    def retry_record(
        self, component: str, attempt: Callable[[], Any], error: Exception, record: Any
    ) -> bool:
        """The runtime's policy (``api/_dead_letters.Retry``): retried, then dead-lettered."""
        return self.retry(component, attempt, error, record)

    @property
    def retries(self) -> int:
        return self.retry.retries

    def _dead_letter(self, component: str, reason: str, tb: str, record: Any) -> None:
        row = [component, reason, tb, record]
        self.dead_letters.append(row)
        if self._hooks is not None:
            self._hooks.dead_lettered(self, row)
        if self._router is not None and self._router.selectors(DEAD_LETTERS):
            anchor = self.current
            self.emit(row, DEAD_LETTERS, anchors=[anchor] if anchor is not None else None)

    # -- runtime components' hooks ---------------------------------------------------
    def system(self, msg: ControlMessage) -> None:
        """A control message to the stream manager: recorded."""
        self.system_messages.append(msg)

    def system_frame(self, frame: bytes) -> None:
        """A ready frame to the stream manager: recorded."""
        self.system_frames.append(frame)

    def flush(self) -> None:
        """Send what was emitted now: it is recorded as emitted already."""

    def report_dead_letter(self, row: Sequence[Any], origin: str) -> None:
        """A dead letter made elsewhere, reported: recorded."""
        self.reported_dead_letters.append((list(row), origin))
