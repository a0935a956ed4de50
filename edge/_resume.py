"""An agent's resume from its own disk: the kept orders it may run again, and those it may not.

The agent keeps its orders on its own disk (``_orders.py``) and on start
resumes the edge subgraphs it was ordered to run from there, before it
reaches the master (which may be out of reach): each one whose package is in
its workdir (verified by hash) starts at once; one whose package is not, or
whose edge subgraph no longer loads, is unresumed and says so in the agent's
health until the master orders it again. Until its edge container reports
one, a kept subgraph's backlog is what its outboxes held on disk when the
agent started (read before anything opens them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from headwater.common._discovery import find_master
from headwater.common._exceptions import PackageMismatchError
from headwater.common._health import DEGRADED, FAILED, Health, Level
from headwater.common._ids import name_problem
from headwater.common._package import digest_problem, entry_problem, verify_package
from headwater.common._unpacked import MARK, remove
from headwater.common.wire.proto import runtime_pb2 as pb

from ._outbox import Outbox

log = logging.getLogger("headwater.edge.agent")


class Resume:
    """The kept orders that do not run until the master orders them again, and the backlog
    the kept subgraphs' outboxes held on disk."""

    def __init__(
        self,
        workdir: Path,
        code_dir: Callable[[str], Path],
        outbox_budget: int,
        health: Health,
    ) -> None:
        self.workdir = workdir
        self.code_dir = code_dir  # a package's folder in the workdir
        self.outbox_budget = outbox_budget
        self.health = health
        # kept orders whose package is not on disk: kept until the master sends them again
        self.unresumed: dict[tuple[str, int], pb.RunContainer] = {}
        # (bytes, batches) in a topology's outboxes on disk when this agent started, its
        # backlog until its edge container reports one (never, if it could not resume)
        self.disk_backlog: dict[str, tuple[int, int]] = {}

    def ready(self, run: pb.RunContainer) -> bool:
        """Whether the kept ``run`` may start from disk now: its names are safe and its package
        is in the workdir, verified by hash (its disk backlog is read then). One that may not
        is logged, or unresumed."""
        problem = (
            name_problem(run.topology, "topology name")
            or digest_problem(run.package)
            or entry_problem(run.entry)
        )
        if problem is not None:  # names become paths: never one outside the workdir
            log.error("not resuming a kept order: %s", problem)
            return False
        code = self.code_dir(run.package)
        try:
            verify_package(code.with_suffix(".zip").read_bytes(), run.package)
            if not (code / MARK).exists():
                raise FileNotFoundError(code / MARK)
        except (OSError, PackageMismatchError) as exc:
            why = (
                "is not in " + str(code.parent)
                if isinstance(exc, OSError)
                else "on disk does not hash to its name"
            )
            self.not_resumed(
                run, f"its package {run.package[:19]} {why}; waiting for the master to send it"
            )
            remove(code)  # the master's order fetches it
            return False
        log.info("resuming the edge subgraph of %r from this agent's disk", run.topology)
        # its backlog until its container reports one (read before it opens the outbox)
        self.disk_backlog[run.topology] = self.outbox_on_disk(run.topology)
        return True

    def start_kept(
        self,
        runs: Iterable[pb.RunContainer],
        orders: dict[tuple[str, int], pb.RunContainer],
        start: Callable[[pb.RunContainer, Path], None],
    ) -> None:
        """Start (``start``) each of the kept ``runs`` that is ready, ordered again in
        ``orders``; one whose edge subgraph no longer loads is unresumed."""
        for run in runs:
            if not self.ready(run):
                continue
            orders[(run.topology, run.container)] = run
            try:
                start(run, self.code_dir(run.package) / run.entry)
            except Exception as exc:  # user code that no longer loads must not stop the agent
                log.exception("cannot resume the edge subgraph of %r", run.topology)
                orders.pop((run.topology, run.container), None)
                self.not_resumed(run, f"its edge subgraph does not load: {exc}", FAILED)

    def not_resumed(self, run: pb.RunContainer, why: str, level: Level = DEGRADED) -> None:
        """An order kept on disk that does not run until the master orders it again."""
        self.unresumed[(run.topology, run.container)] = run
        self.disk_backlog[run.topology] = self.outbox_on_disk(run.topology)
        self.health.set(
            f"orders:{run.topology}", level, f"cannot resume {run.topology!r} from disk: {why}"
        )

    def started(self, run: pb.RunContainer) -> None:
        """``run`` starts (resumed, or ordered by the master): no longer unresumed."""
        self.unresumed.pop((run.topology, run.container), None)
        self.health.clear(f"orders:{run.topology}")

    def forget(self, topology: str) -> None:
        """The topology was stopped for good here."""
        for key in [k for k in self.unresumed if k[0] == topology]:
            del self.unresumed[key]
        self.disk_backlog.pop(topology, None)

    def outbox_on_disk(self, topology: str) -> tuple[int, int]:
        """Bytes and batches the topology's outboxes hold (read only while nothing runs it)."""
        nbytes = batches = 0
        root = self.workdir / topology / "container-0" / "outbox"
        for d in sorted(root.iterdir()) if root.is_dir() else []:
            try:
                box = Outbox(d, self.outbox_budget)
            except Exception as exc:  # rocksdict raises its own exceptions
                log.warning("cannot read the outbox %s: %s", d, exc)
                continue
            try:
                nbytes, batches = nbytes + box.nbytes, batches + box.backlog
            finally:
                box.close()
        return nbytes, batches


async def master_moved(kept: str) -> str | None:
    """Where zeroconf finds the master now, if not at ``kept`` (the address a resumed agent
    kept); None where it is there still, or zeroconf fails (go on with the kept address)."""
    try:
        found = await find_master()
    except Exception as exc:  # zeroconf's own errors: go on with the kept address
        log.warning("looking for the master by zeroconf failed: %s", exc)
        return None
    if found == kept:
        return None
    log.info("the master moved from %s to %s", kept, found)
    return found
