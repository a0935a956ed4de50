"""The containers' session with their topology master: who is registered, and their streams.

``ContainerSession`` keeps what each container last told the topology master (its
registration with the stream manager's address, its heartbeat time, the metrics and
exceptions it reports: the last 200, each message and traceback cut to a bound, since user
code may raise one of any size and the console's exception history shows them) and the
command stream each one watches: ``broadcast`` queues a command for every watcher,
``send_to`` for one container. It knows nothing of plans, checkpoints or revisions:
``TopologyMaster`` (``_tmaster.py``) decides what to send, and hands ``watch`` the opening
commands a stream starts with. It takes only the clock.
Runs on one event loop; nothing here is threadsafe.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any

from .._clock import Clock
from ..wire.proto import runtime_pb2 as pb

MAX_MESSAGE_CHARS = 2000
"""The most of an exception's message kept (user code may raise one of any size)."""
MAX_TRACEBACK_CHARS = 16000
"""The most of its traceback kept: the end, where it was raised."""


def _cut(text: str, keep: int, tail: bool = False) -> str:
    if len(text) <= keep:
        return text
    cut = len(text) - keep
    return f"[{cut} chars cut]...{text[-keep:]}" if tail else f"{text[:keep]}...[{cut} chars cut]"


class ContainerSession:
    """Registrations, heartbeats, reports and command streams of one domain's containers."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.containers: dict[int, pb.ContainerInfo] = {}
        self.last_heartbeat: dict[int, float] = {}
        self.metrics: dict[str, dict[str, float]] = {}
        self.exceptions: deque[dict[str, Any]] = deque(maxlen=200)
        self._watchers: set[asyncio.Queue[pb.Command]] = set()
        self._watch_of: dict[int, asyncio.Queue[pb.Command]] = {}  # container -> its stream

    def register(self, info: pb.ContainerInfo) -> pb.ContainerInfo | None:
        """Keep ``info`` (and count it a heartbeat); returns what the container had before."""
        old = self.containers.get(info.container)
        self.containers[info.container] = info
        self.last_heartbeat[info.container] = self.clock.monotonic()
        return old

    def heard_from(self, container: int) -> None:
        """A registered container spoke (an acknowledgement, say): it is alive now, so its
        silence is not reported until a heartbeat interval has passed again."""
        if container in self.containers:
            self.last_heartbeat[container] = self.clock.monotonic()

    def heartbeat(self, request: pb.Heartbeat) -> None:
        self.last_heartbeat[request.container] = self.clock.monotonic()
        fresh: set[str] = set()
        for m in request.metrics:
            scope = self.metrics.setdefault(m.scope, {})
            if m.scope not in fresh:  # a task's hot keys are its last interval's alone
                fresh.add(m.scope)
                for k in [k for k in scope if k.startswith("hot_key:")]:
                    del scope[k]
            scope[m.name] = m.value
        for e in request.exceptions:
            self.exceptions.append(
                {
                    "task": e.task_id,
                    "component": e.component,
                    "message": _cut(e.message, MAX_MESSAGE_CHARS),
                    "traceback": _cut(e.traceback, MAX_TRACEBACK_CHARS, tail=True),
                    "time_ms": e.time_ms,
                }
            )

    def report(self, component: str, message: str) -> None:
        """Keep an error of the control plane beside the instances' exceptions."""
        self.exceptions.append(
            {
                "task": -1,
                "component": component,
                "message": message,
                "traceback": "",
                "time_ms": int(self.clock.time() * 1000),
            }
        )

    async def watch(
        self, container: int, opening: Callable[[], Iterator[pb.Command]]
    ) -> AsyncGenerator[pb.Command, None]:
        """The command stream of one container: ``opening()`` (drawn lazily, once the
        stream is queued for), then every command queued for it."""
        queue: asyncio.Queue[pb.Command] = asyncio.Queue()
        self._watchers.add(queue)
        self._watch_of[container] = queue
        try:
            for command in opening():
                yield command
            while True:
                yield await queue.get()
        finally:
            self._watchers.discard(queue)
            if self._watch_of.get(container) is queue:
                del self._watch_of[container]

    def broadcast(self, command: pb.Command) -> None:
        for q in self._watchers:
            q.put_nowait(command)

    def send_to(self, container: int, command: pb.Command) -> bool:
        """Queue ``command`` for one container; False when it is not watching."""
        q = self._watch_of.get(container)
        if q is None:
            return False
        q.put_nowait(command)
        return True
