"""A daemon's waits that a stop ends: what it waits on before it serves (a master to find,
its first enrolment, its turn to lead) may never come, and must not outlast a SIGTERM or a
Ctrl-C."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def until_stopped(stopping: asyncio.Event, work: Awaitable[T]) -> T | None:
    """``work``'s result, or None once ``stopping`` is set first: ``work`` is then cancelled
    and waited for (never started, if the stop came before). An error ``work`` raises, even
    while it is cancelled, is raised here."""
    if stopping.is_set():
        if inspect.iscoroutine(work):
            work.close()  # never awaited: no warning that it was not
        return None
    job = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait((job, stop), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not job.done():
            job.cancel()
            await asyncio.wait((job,))  # (a cancellation of this wait is not swallowed)
    return None if job.cancelled() else job.result()
