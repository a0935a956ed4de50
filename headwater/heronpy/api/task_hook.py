"""heronpy's task hooks (``heronpy.api.task_hook``).

Add one in ``initialize`` with ``context.add_task_hook(hook)``; the component then
calls it as a Heron instance does: ``prepare`` right after ``initialize``, ``emit``
on every emit, ``spout_ack`` / ``spout_fail`` in spouts, ``bolt_execute`` /
``bolt_ack`` / ``bolt_fail`` in bolts, ``clean_up`` on an orderly close.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ITaskHook:
    def prepare(self, conf: Any, context: Any) -> None:
        """After the component's ``initialize``."""

    def clean_up(self) -> None:
        """Before the component closes."""

    def emit(self, emit_info: EmitInfo) -> None:
        """On every emit."""

    def spout_ack(self, spout_ack_info: SpoutAckInfo) -> None:
        """In a spout, when a tuple tree is acked."""

    def spout_fail(self, spout_fail_info: SpoutFailInfo) -> None:
        """In a spout, when a tuple tree fails."""

    def bolt_execute(self, bolt_execute_info: BoltExecuteInfo) -> None:
        """In a bolt, after each ``process``."""

    def bolt_ack(self, bolt_ack_info: BoltAckInfo) -> None:
        """In a bolt, on each ``ack``."""

    def bolt_fail(self, bolt_fail_info: BoltFailInfo) -> None:
        """In a bolt, on each ``fail``."""


class EmitInfo(NamedTuple):
    values: Any
    stream_id: str
    task_id: int
    out_tasks: Any


class SpoutAckInfo(NamedTuple):
    message_id: Any
    spout_task_id: int
    complete_latency_ms: float


class SpoutFailInfo(NamedTuple):
    message_id: Any
    spout_task_id: int
    fail_latency_ms: float


class BoltExecuteInfo(NamedTuple):
    heron_tuple: Any
    executing_task_id: int
    execute_latency_ms: float


class BoltAckInfo(NamedTuple):
    heron_tuple: Any
    acking_task_id: int
    process_latency_ms: float


class BoltFailInfo(NamedTuple):
    heron_tuple: Any
    failing_task_id: int
    fail_latency_ms: float


__all__ = [
    "BoltAckInfo",
    "BoltExecuteInfo",
    "BoltFailInfo",
    "EmitInfo",
    "ITaskHook",
    "SpoutAckInfo",
    "SpoutFailInfo",
]
