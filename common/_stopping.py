"""A daemon's waits that a stop ends: what it waits on before it serves (a master to find,
its first enrolment, its turn to lead) may never come, and must not outlast a SIGTERM or a
Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def until_stopped(stopping: asyncio.Event, work: Awaitable[T]) -> T | None:
    """``work``'s result, or None once ``stopping`` is set first (``work`` is cancelled, and
    waited for: what it holds is let go before this returns)."""
    job = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait((job, stop), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not job.done():
            job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await job
    return None if job.cancelled() else job.result()
