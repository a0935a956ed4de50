"""The control messages an instance takes from its stmgr, and what each does.

Called on the executor thread between user-code calls (a spout's
``next_tuple``, a bolt's frames), so a component never sees two at once.
A message that is none of the instance's own goes to a ``SystemComponent``;
any other is logged and dropped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..api import Bolt, Spout
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

if TYPE_CHECKING:
    from ._instance import Instance

log = logging.getLogger("headwater.instance")


def on_control(inst: Instance, msg: ControlMessage, comp: Spout | Bolt) -> None:
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
            inst.barriers.take_snapshot(checkpoint)
        case Commit(id=checkpoint):
            comp.on_commit(checkpoint)
            if inst.barriers.committed(checkpoint):
                inst.stopping = True  # its last checkpoint is published: done
        case Prepare():
            inst.barriers.prepare(msg)
        case Abort():
            inst.barriers.abort()
        case _ if inst.on_system is not None:
            inst.on_system(msg)
        case _:
            log.debug("task %d: ignoring a %r control message", inst.task, msg.TYPE)
