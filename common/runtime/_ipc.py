"""The stream manager's end of one local instance's Unix socket.

An instance connects, says ``Hello`` and from then on its frames go to
``StreamManager.on_local_frame``. The transport's write buffer has the
stmgr's water marks: passing the high mark starts backpressure for the task
(``task:N``), falling below the low mark lifts it. A spout's socket stops
being read while the spout is throttled. A connection sees its stream manager
through ``InstanceHost``: the counters it adds to and the three events it reports.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from ..api import RuntimeConfig
from ..wire import FrameReader
from ..wire._frame import length_prefix


class InstanceHost(Protocol):
    """What an instance's connection needs of its stream manager."""

    bytes_in: int  # what the connection read, counted on the hot path
    bytes_out: int  # what it wrote (length prefixes included)

    @property
    def epoch(self) -> int:
        """The rollback epoch: a connection keeps the one it connected in."""
        ...

    @property
    def rc(self) -> RuntimeConfig:
        """The topology's runtime config (the write buffer's water marks)."""
        ...

    def on_local_frame(self, conn: InstanceConnection, frame: bytes) -> None:
        """A frame the instance sent."""

    def on_write_buffer(self, conn: InstanceConnection) -> None:
        """The write buffer crossed a water mark (``write_paused`` says which)."""

    def on_instance_lost(self, conn: InstanceConnection) -> None:
        """The connection closed."""


def task_key(task: int) -> str:
    """The backpressure key of the buffer towards local ``task``."""
    return f"task:{task}"


class InstanceConnection(asyncio.Protocol):
    """One local instance's Unix-socket connection.

    ``heard`` is the last time bytes came from the instance (its gateway beats
    every second); it reads ``time.monotonic`` directly, as it is set on
    every read.
    """

    def __init__(self, stmgr: InstanceHost) -> None:
        self.stmgr = stmgr
        self.reader = FrameReader()
        self.transport: asyncio.Transport | None = None
        self.task: int | None = None
        self.pid: int | None = None
        self.paused_reading = False
        self.write_paused = False  # the write buffer passed the high mark, not yet the low
        self.stale = False
        # the epoch it connected in: a dying instance of an epoch rolled back since, whose
        # hello was not read before the reset, must not become its task's connection
        self.epoch = stmgr.epoch
        self.heard = time.monotonic()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        rc = self.stmgr.rc
        transport.set_write_buffer_limits(high=rc.stmgr_high_water, low=rc.stmgr_low_water)

    def data_received(self, data: bytes) -> None:
        stmgr = self.stmgr
        if self.stale:
            return  # an instance of a rolled-back epoch, about to be killed
        self.heard = time.monotonic()
        stmgr.bytes_in += len(data)
        on_frame = stmgr.on_local_frame
        for frame in self.reader.feed(data):
            if self.refused():
                return  # by a frame of this same read (its hello)
            on_frame(self, frame)

    def refused(self) -> bool:
        """Stale: an instance of a rolled-back epoch, or at the wrong container."""
        return self.stale

    def write(self, frame: bytes) -> None:
        assert self.transport is not None
        self.transport.write(length_prefix(frame) + frame)
        self.stmgr.bytes_out += len(frame) + 4

    def pause_writing(self) -> None:
        # asyncio calls this once per crossing, so the state is kept here and the stmgr
        # decides from it (and from what it parked for the task) whether the key is on
        self.write_paused = True
        self.stmgr.on_write_buffer(self)

    def resume_writing(self) -> None:
        self.write_paused = False
        self.stmgr.on_write_buffer(self)

    def set_reading(self, on: bool) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        if on and self.paused_reading:
            self.transport.resume_reading()
            self.heard = time.monotonic()  # not read while paused: silence is not its own
        elif not on and not self.paused_reading:
            self.transport.pause_reading()
        self.paused_reading = not on

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.stmgr.on_instance_lost(self)


async def serve_instances(stmgr: InstanceHost, path: str) -> asyncio.Server:
    """Listen on the Unix socket ``path`` for the container's instances."""
    loop = asyncio.get_running_loop()
    return await loop.create_unix_server(lambda: InstanceConnection(stmgr), path)
