"""The local instances' sessions with their stream manager: hello, loss, retirement, control.

An instance connects over the container's Unix socket (``_ipc.py``) and says hello; the
stream manager takes it as its task's connection if the task runs here and it is of the
current epoch, hands it what was parked for the task, and (a spout) lets it read unless
backpressure throttles it and activates it if the topology is active. ``InstanceSessions``
does that, and the rest of a connection's life: its loss, its retirement in a live edit,
activating or deactivating every spout (``set_active``, through the stream
manager's ``send_control``), and which tasks fell silent. It is reached from the stream manager
only, never per record, and sees it through ``SessionPorts`` (the routing tables and the
connections) plus the few callables it gives. Event loop only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..wire._control import Activate, ControlMessage, Deactivate
from ._staging import Staging

if TYPE_CHECKING:
    from ._ipc import InstanceConnection

log = logging.getLogger("headwater.stmgr")


class SessionPorts(Protocol):
    """What the sessions read of their stream manager, and the two flags they set."""

    epoch: int  # a rollback's; an instance of another epoch is turned away
    active: bool  # whether spouts run (``Activate``) or wait (``Deactivate``)

    @property
    def conns(self) -> dict[int, InstanceConnection]:
        """Connected local task -> its connection (mutated in place)."""
        ...

    @property
    def local_tasks(self) -> set[int]: ...

    @property
    def task_component(self) -> dict[int, str]: ...

    @property
    def spout_components(self) -> set[str]: ...

    @property
    def throttled(self) -> frozenset[str]:
        """The spout components backpressure holds now."""
        ...

    def check_task_buffer(self, task: int) -> None:
        """Set or lift backpressure for what waits for ``task``."""

    def send_control(self, task: int, msg: ControlMessage) -> None:
        """Send ``msg`` to local ``task`` if it is connected."""


class InstanceSessions:
    """Connects, loses and retires the local tasks' instances; (de)activates spouts."""

    def __init__(
        self,
        ports: SessionPorts,
        staging: Staging,
        *,
        fold: Callable[[int], None],
        forget_spout: Callable[[int], None],
        on_hello: Callable[[int], None],
    ) -> None:
        """``fold``: keep a task's counters past its instance (``TaskMetrics.fold``);
        ``forget_spout``: drop a spout task's roots (``SpoutAcks.forget_task``);
        ``on_hello``: tell the container (``StreamManagerHooks.on_hello``)."""
        self._p = ports
        self._staging = staging
        self._fold = fold
        self._forget_spout = forget_spout
        self._on_hello = on_hello

    def on_instance_hello(self, conn: InstanceConnection, task: int, pid: int) -> None:
        p = self._p
        if task not in p.local_tasks:
            log.error("instance for task %d connected to the wrong container", task)
            conn.stale = True
            conn.close()
            return
        if conn.epoch != p.epoch:  # connected before a rollback: one being killed
            log.info(
                "task %d: an instance of epoch %d said hello after the rollback", task, conn.epoch
            )
            conn.stale = True
            conn.close()
            return
        conn.task, conn.pid = task, pid
        p.conns[task] = conn
        for frame in self._staging.take(task):
            conn.write(frame)
        p.check_task_buffer(task)  # what was parked may fill the new buffer at once
        if p.task_component[task] in p.spout_components:
            conn.set_reading(p.task_component[task] not in p.throttled)
            if p.active:
                p.send_control(task, Activate())
        log.info("task %d (%s) connected, pid %d", task, p.task_component[task], pid)
        self._on_hello(task)

    def on_instance_lost(self, conn: InstanceConnection) -> None:
        p = self._p
        task = conn.task
        if task is None or p.conns.get(task) is not conn:
            return
        del p.conns[task]
        p.check_task_buffer(task)
        self._fold(task)
        if p.task_component[task] in p.spout_components:
            self._forget_spout(task)

    def retire(self, task: int) -> None:
        """The old instance of ``task`` is gone: frames wait for its successor (if any)."""
        self._staging.retiring.pop(task, None)
        conn = self._p.conns.pop(task, None)
        if conn is not None:
            conn.stale = True
            self._fold(task)
            self._p.check_task_buffer(task)

    def set_active(self, active: bool) -> None:
        p = self._p
        if active == p.active:
            return
        p.active = active
        msg: ControlMessage = Activate() if active else Deactivate()
        for task in p.conns:
            if p.task_component[task] in p.spout_components:
                p.send_control(task, msg)

    def silent(self, limit_s: float) -> dict[int, float]:
        """Connected tasks not heard from for over ``limit_s`` (while read) -> seconds."""
        now = time.monotonic()  # the clock of InstanceConnection.heard
        return {
            task: now - c.heard
            for task, c in self._p.conns.items()
            if not c.paused_reading and not c.stale and now - c.heard > limit_s
        }
