"""headwater.common.runtime._instance_control: what each control message does to an instance."""

from __future__ import annotations

from typing import Any, cast

from headwater import Bolt, Spout, Tuple
from headwater.common.api import BatchBolt, SystemComponent
from headwater.common.runtime._instance_control import Controlled, on_control
from headwater.common.wire._control import (
    Activate,
    Commit,
    ControlMessage,
    Deactivate,
    LogCommitted,
    Stop,
)


class _Spout(Spout):
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.got: list[ControlMessage] = []

    def next_tuple(self) -> None:
        pass

    def activate(self) -> None:
        self.calls.append("activate")

    def deactivate(self) -> None:
        self.calls.append("deactivate")

    def on_commit(self, checkpoint_id: int) -> None:
        self.calls.append(f"commit {checkpoint_id}")

    def on_system(self, msg: ControlMessage) -> None:
        self.got.append(msg)


class _Gate:
    def done(self, checkpoint: int) -> bool:
        return checkpoint >= 9


class _Store:
    def __init__(self) -> None:
        self.committed_at: list[int] = []

    def committed(self, checkpoint: int) -> None:
        self.committed_at.append(checkpoint)


class _Inst:
    def __init__(self, comp: _Spout) -> None:
        self.task = 1
        self.active = False
        self.stopping = False
        self.gate = _Gate()
        self.store = _Store()
        self.on_system = comp.on_system

    def done(self) -> bool:
        return self.stopping


def test_messages_drive_the_instance_and_the_rest_reach_a_system_component() -> None:
    comp = _Spout()
    inst = _Inst(comp)
    i = cast(Controlled, cast(Any, inst))
    for msg in (Activate(), Activate(), Deactivate(), Commit(3)):
        on_control(i, msg, comp)
    assert comp.calls == ["activate", "deactivate", "commit 3"] and not inst.done()
    assert inst.store.committed_at == [3]  # later snapshots may build on it
    batch = LogCommitted("/log", {"0": 4})
    on_control(i, batch, comp)
    assert comp.got == [batch]
    on_control(i, Commit(9), comp)  # a retired instance's last checkpoint: done
    assert inst.done()
    other = _Inst(comp)
    on_control(cast(Controlled, cast(Any, other)), Stop(), comp)
    assert other.done()


def test_extension_points_are_protocols() -> None:
    class Plain(Bolt):
        def process(self, tup: Tuple) -> None:
            pass

    class Batch(Plain):
        def process_values(
            self, component: str, stream: str, task: int, entries: list[list[Any]]
        ) -> None:
            pass

    assert isinstance(Batch(), BatchBolt) and not isinstance(Plain(), BatchBolt)
    assert isinstance(_Spout(), SystemComponent) and not isinstance(Plain(), SystemComponent)
