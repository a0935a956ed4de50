"""An edge container inside the agent's own process: ``headwater agent --footprint single``.

``HostedContainer`` runs an ``EdgeContainer`` (its instances on threads, as with
``--footprint small``) on the agent's event loop and stands in for its process
before the node's supervisor: ``poll`` says whether it ended (1 if it raised),
``terminate`` stops it in order, ``wait`` waits for that from another thread. No
interpreter, no grpc or RocksDB of its own: the agent's are shared.

A thread cannot be killed: a task the container would kill is cut off from its
stream manager instead (``InstanceThread.abandon``) and its thread ends at its
next look at its queues; a task hung in user code stays a stray thread (and one
that holds the GIL hangs the agent). ``kill`` here only stops the container in
order. The container's log lines go to the agent's log.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import threading
from collections.abc import Mapping

from headwater.common.runtime._container_config import parse_config

from ._container import EdgeContainer

log = logging.getLogger("headwater.edge.agent")


class HostedContainer:
    def __init__(self, args: list[str], env: Mapping[str, str]) -> None:
        """``args``: the container's command line (after ``-m MODULE``); ``env``: its
        settings, which become the agent's own environment (the same for every subgraph)."""
        os.environ.update(env)
        self.pid = os.getpid()
        self.returncode: int | None = None
        self._config = parse_config([*args, "--footprint", "small"])
        self._container: EdgeContainer | None = None
        self._loop = asyncio.get_running_loop()
        self._done = threading.Event()
        self._task = self._loop.create_task(self._run())

    async def _run(self) -> None:
        code = 1
        try:
            self._container = EdgeContainer(self._config, hosted=True)
            await self._container.run()
            code = 0
        except asyncio.CancelledError:
            code = 0
            raise
        except BaseException:
            log.exception("the hosted edge container %d failed", self._config.container)
        finally:
            self.returncode = code
            self._done.set()

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def terminate(self) -> None:
        self._loop.call_soon_threadsafe(self._stop)

    def _stop(self) -> None:
        if self._container is not None:
            self._container.stopping.set()
        else:
            self._task.cancel()

    def kill(self) -> None:
        self.terminate()

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired("hosted edge container", timeout or 0.0)
        return self.returncode if self.returncode is not None else 1
