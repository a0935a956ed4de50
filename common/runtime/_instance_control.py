"""The control messages an instance takes from its stmgr, and what each does.

Called on the executor thread between user-code calls (a spout's
``next_tuple``, a bolt's frames), so a component never sees two at once.
A message that is none of the instance's own goes to a ``SystemComponent``;
any other is logged and dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from ..api import Bolt, Spout
from ..wire import decode
from ..wire._control import (
    Abort,
    Activate,
    Commit,
    ControlMessage,
    Deactivate,
    Prepare,
    Stop,
    TakeCheckpoint,
)
from ._input_gate import InputGate
from ._outbox_sink import OutboxSink
from ._revision import Revision, load_revision
from ._task_state import TaskState

log = logging.getLogger("headwater.instance")


class Controlled(Protocol):
    """What control messages act on."""

    active: bool
    stopping: bool

    @property
    def task(self) -> int: ...

    @property
    def component(self) -> str: ...

    @property
    def ctx(self) -> object: ...

    @property
    def gate(self) -> InputGate[Revision]: ...

    @property
    def store(self) -> TaskState: ...

    @property
    def on_system(self) -> Callable[[ControlMessage], None] | None: ...


def on_control(inst: Controlled, msg: ControlMessage, comp: Spout | Bolt) -> None:
    match msg:
        case Activate() if isinstance(comp, Spout):
            if not inst.active:
                inst.active = True
                comp.activate()
        case Deactivate() if isinstance(comp, Spout):
            if inst.active:
                inst.active = False
                comp.deactivate()
        case Stop():
            inst.stopping = True
        case TakeCheckpoint(id=checkpoint) if isinstance(comp, Spout):
            inst.gate.take_snapshot(checkpoint)
        case Commit(id=checkpoint):
            comp.on_commit(checkpoint)
            inst.store.committed(checkpoint)
            if inst.gate.done(checkpoint):
                inst.stopping = True  # its last checkpoint is published: done
        case Prepare(retire=True):
            inst.gate.retire_at(msg.at)
            if msg.fence is not None and isinstance(comp, OutboxSink):
                comp.seal_fence(msg.at, decode(msg.fence))
        case Prepare():  # stage a revision: load its routing now, switch at its checkpoint
            inst.gate.stage(msg.at, load_revision(msg, inst.component, inst.ctx, inst.task))
        case Abort():
            inst.gate.abort()
            if isinstance(comp, OutboxSink):
                comp.fence = None
        case _ if inst.on_system is not None:
            inst.on_system(msg)
        case _:
            log.debug("task %d: ignoring a %r control message", inst.task, msg.TYPE)
