"""Instances on threads of the container's own process: the small footprint.

A container started with ``--footprint small`` (an agent's ``--footprint
small``) runs each local task as ``InstanceThread`` instead of an instance
process: the same ``Instance`` (a gateway thread and an executor thread, the
same bounded queues), connected to the same stream manager over the same
Unix socket and frames, but without an interpreter of its own. It stands in
for the task's ``Popen`` before the ``Supervisor``: ``poll`` says whether it
ended (0, or 1 when user code raised, reported to the stmgr as a process
does), ``terminate`` asks it to stop, ``wait`` joins it.

A thread cannot be killed. Where the container would kill an instance (a
rollback's restore, one gone silent, one that did not stop in time), it
calls ``on_kill`` instead, and the container ends its whole process: its
node restarts it, and every task restores from the last complete checkpoint
as after any container crash. One task's crash thus takes its container's
other tasks down with it (``docs/design.md``, "The small footprint"). A
container hosted in the agent's process (``--footprint single``) must not end
it: it cuts the thread off from its stmgr instead (``abandon``) and restores
with new threads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import threading
from collections.abc import Callable

from ..api import Topology
from ..plan import PhysicalPlan
from .instance import TASK_PACKAGE, StopFlag, run_task

log = logging.getLogger("headwater.container")

FOOTPRINTS = ("normal", "small", "single")
"""An agent's: ``normal``, an OS process per instance (crash isolation); ``small``, its edge
container's instances on threads of that one process; ``single``, the edge container itself
inside the agent's process too (``edge/_hosted.py``). A container's own ``--footprint`` is
``normal`` or ``small`` (hosted, it is given ``small``)."""


class InstanceThread:
    """One task on a thread of this process, supervised as its process would be."""

    def __init__(
        self,
        task: int,
        socket_path: str,
        load: Callable[[], tuple[Topology, PhysicalPlan | None]],
        on_kill: Callable[[InstanceThread], None],
        package: tuple[str, str, str] = ("", "", ""),
    ) -> None:
        """``package``: its topology file, the labels (JSON) and the agent's id a component
        reads at open (``live_model``), as ``TOPOLOGY_FILE_ENV``, ``LABELS_ENV`` and
        ``AGENT_ID_ENV`` say them to a process."""
        self.task = task
        self._package = package
        self.pid = os.getpid()
        self.returncode: int | None = None
        self.abandoned = False
        self._on_kill = on_kill
        self._stop = StopFlag()
        self._thread = threading.Thread(
            target=self._run, args=(socket_path, load), name=f"task-{task}", daemon=True
        )
        self._thread.start()

    def _run(
        self, socket_path: str, load: Callable[[], tuple[Topology, PhysicalPlan | None]]
    ) -> None:
        code = 1
        TASK_PACKAGE.file, TASK_PACKAGE.labels, TASK_PACKAGE.agent = self._package
        try:
            code = run_task(self.task, socket_path, load, self._stop)
        except BaseException:  # not user code (run_task reports that): the socket, a bug
            log.exception("task %d ended unexpectedly", self.task)
        finally:
            self.returncode = code

    def poll(self) -> int | None:
        if self.abandoned:
            return -9 if self.returncode is None else self.returncode
        return None if self._thread.is_alive() else self.returncode

    def terminate(self) -> None:
        self._stop.set()

    def wait(self, timeout: float | None = None) -> int:
        if self.abandoned:
            # a restore waits (its grace, bounded) for a cut-off task to end: it may hold
            # what its successor opens (a file, a database); one hung in user code stays
            if timeout is not None:
                self._thread.join(timeout)
            return -9 if self.returncode is None else self.returncode
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise subprocess.TimeoutExpired(f"task-{self.task}", timeout or 0.0)
        return self.returncode if self.returncode is not None else 1

    def kill(self) -> None:
        if self.poll() is None:
            self._on_kill(self)

    def abandon(self) -> None:
        """Cut the task off from its stmgr and count it dead, though its thread may still be
        in user code: it stops at its next look at its queues (an emit blocked on its full
        outbox returns), and can send nothing more.
        (The agent's ``--footprint single``, where ending the process would end the agent.)"""
        self.abandoned = True
        self._stop.set()
        inst = self._stop.inst
        if inst is not None:  # nothing drains it any more: an emit blocked on it returns
            inst.gateway.outbox.close()
        sock = self._stop.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
