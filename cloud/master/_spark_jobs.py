"""The master's Spark jobs: user PySpark jobs (and rollup specs) submitted as deployments.

A submission is a job file (``.py`` defining ``run(spark, ctx)``, ``.toml`` a rollup
spec) or a zip package of one with its siblings (``entry`` names the file), a name, a
mode (``once``, ``every`` N seconds, ``continuous``), the Spark master (none: embedded
local mode on the worker), parameters, and the landing and warehouse folders on the
workers (none: the worker's own ``--landing``/``--warehouse``). It is untrusted: bounded
(``MAX_JOB_FILE_BYTES`` for a bare file, ``check_package`` for a zip, ``MAX_PARAMS``),
checked (``_spark_check.py``: a ``.py`` file is imported only in a child process), and a
refused one leaves nothing behind. The job's files are stored as a package (a zip, named
by its hash) in ``STATE/spark/packages`` (on the master's disk; with a shared blob store,
``--blob-store``, there too before the submission is answered, and fetched from it by a
master that lacks it), the records in ``spark_jobs.json`` of the master's state (written
whole), resumed at the master's start.

Each job is given to one attached worker (the fewest jobs, ties by id) with a
``RunContainer`` of kind ``spark-job`` on its attach stream; ``tick`` (every second)
re-sends it when the worker attaches again, gives it to another worker once its own has
been offline for ``NODE_OFFLINE_AFTER_S``, keeps the latest status the worker reports
for it (``NodeStatus.spark_jobs``: its driver's ``status.json``), and stops a job a
worker runs that the master no longer gives it. Kill withdraws the order and removes
the record. A job that declared the models it registers (``registers``) is given its own
token, which may register versions of those only (``_spark_tokens.py``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import time
from collections import Counter
from collections.abc import Container
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from headwater.common._exceptions import HeadwaterError
from headwater.common._ids import name_problem
from headwater.common._package import (
    PackageStore,
    check_package,
    entry_problem,
    package_hash,
    unpack_package,
    zip_package,
)
from headwater.common.plan._child_loader import LoadLimits
from headwater.common.security import TokenStore
from headwater.common.statemgr import Blobs, Record, StateManager
from headwater.common.wire.proto import runtime_pb2 as pb

from ._code import PackageDeletes
from ._node_logs import NodeLogs
from ._nodes import NODE_OFFLINE_AFTER_S, Nodes
from ._spark_check import JobRefused, check_job, check_spec, job_problem
from ._spark_record import KIND, SparkJob, status_view
from ._spark_tokens import JobTokens, registers_problem

__all__ = ["KIND", "SparkHost", "SparkJob", "SparkJobs", "status_view"]

log = logging.getLogger("headwater.master")
MAX_JOB_FILE_BYTES = 1 << 20  # a bare job file (a zip package is bounded as a topology's)
MAX_REPORTED = 256  # the most Spark jobs of one node's report the master looks at


class SparkHost(Protocol):
    """What the Spark jobs ask of the master (``Master`` is one): its state folder (the
    jobs' packages) and state (their records), tokens, its node registry and log requests,
    the names its topologies take, and its REST API's URL as a worker reaches it."""

    @property
    def state_dir(self) -> Path: ...

    @property
    def state(self) -> StateManager: ...

    @property
    def tokens(self) -> TokenStore: ...

    @property
    def nodes(self) -> Nodes: ...

    @property
    def node_logs(self) -> NodeLogs: ...

    @property
    def deployments(self) -> Container[str]: ...

    @property
    def http_url(self) -> str: ...


class SparkJobs:
    """The master's Spark jobs (on its event loop)."""

    def __init__(self, master: SparkHost, limits: LoadLimits, shared: Blobs | None = None) -> None:
        """``shared``: the blob store the masters share (None: packages on this disk alone)."""
        self.master = master
        self.limits = limits
        self.packages = PackageStore(master.state_dir / "spark" / "packages", shared)
        self.deletes = PackageDeletes(self.packages)
        self._keeping: Counter[str] = Counter()  # packages a submission is keeping now
        self.record = Record(master.state, "spark_jobs.json")
        self.jobs: dict[str, SparkJob] = {}
        self._sent: dict[str, object] = {}  # job -> the node session its order went on
        self._started = time.monotonic()
        self._checking: set[str] = set()  # names being checked now
        kept = self.record.read()
        if kept is not None:
            for raw in json.loads(kept):
                job = SparkJob(**raw)
                if name_problem(job.name, "Spark job name") is None:
                    self.jobs[job.name] = job
        self.tokens = JobTokens(master.tokens)  # after the jobs: it mints theirs anew
        self.tokens.resume({j.name: j.registers for j in self.jobs.values()})

    def _save(self) -> None:
        self.record.write(json.dumps([asdict(j) for j in self.jobs.values()]).encode())

    # -- submit and kill ---------------------------------------------------------
    async def submit(
        self,
        data: bytes,
        filename: str,
        *,
        name: str = "",
        entry: str = "",
        mode: str = "once",
        every_s: float = 0.0,
        spark_master: str = "",
        params: dict[str, str] | None = None,
        landing: str = "",
        warehouse: str = "",
        registers: list[str] | None = None,
    ) -> dict[str, Any]:
        """Check and store a job, give it to a worker; JobRefused (or PackageRefusedError
        for a zip out of bounds) says why not, and then nothing is kept."""
        params = dict(params or {})
        every_s = every_s if mode == "every" else 0.0  # the interval of an every job only
        registers = list(dict.fromkeys(registers or []))  # in order, once each
        problem = (
            entry_problem(filename)
            or job_problem(mode, every_s, spark_master, params, [landing, warehouse])
            or registers_problem(registers)
        )
        if problem is not None:
            raise JobRefused(problem)
        if filename.endswith(".zip"):
            check_package(data)
            if not entry:
                raise JobRefused("a zip package needs its job file named: entry=FILE.py")
            package = data
        else:
            entry = entry or filename
            if entry != filename:
                raise JobRefused(f"entry {entry!r}: a bare job file is its own entry")
            if len(data) > MAX_JOB_FILE_BYTES:
                raise JobRefused(
                    f"the job file is {len(data)} bytes; the limit is 1 MiB", too_large=True
                )
            package = zip_package({filename: data})
        problem = entry_problem(entry)
        if problem is not None or not entry.endswith((".py", ".toml")):
            raise JobRefused(problem or f"{entry!r}: a job file is a .py job or a .toml spec")
        name = name or Path(entry).stem
        problem = name_problem(name, "Spark job name")
        if problem is not None:
            raise JobRefused(problem)
        self._not_a_topology(name)
        if self.named(name):
            raise JobRefused(f"Spark job {name!r} exists; kill it first (headwater spark kill)")
        self._checking.add(name)
        digest, fresh = package_hash(package), False
        self._keeping[digest] += 1  # not deleted by a kill meanwhile
        try:
            await self._check(package, entry)
            await self.deletes.settled(digest)  # a kill's delete of the same bytes ends first
            # kept (in the shared blob store first) before the submission is answered
            digest, fresh = await asyncio.to_thread(self.packages.keep, package)
            self._not_a_topology(name)  # again: one may have been submitted meanwhile
        except BaseException:
            if fresh and self._keeping[digest] == 1 and not self.runs_package(digest):
                self.deletes.start(digest)
            raise
        finally:
            self._checking.discard(name)
            self._keeping[digest] -= 1
            if not self._keeping[digest]:
                del self._keeping[digest]
        job = SparkJob(name, digest, entry, mode, every_s, spark_master, params, landing, warehouse)
        job.registers = registers
        self.jobs[name] = job
        if registers:
            self.tokens.mint(name, registers)
        self._place(job)
        self._save()
        log.info("Spark job %r submitted (%s, %s)", name, entry, mode)
        return self.view(job)

    def _not_a_topology(self, name: str) -> None:
        if name in self.master.deployments:  # a worker runs both as one user, in one cgroup
            raise JobRefused(
                f"a topology is named {name!r}: a Spark job takes a name no topology has"
            )

    async def _check(self, package: bytes, entry: str) -> None:
        with tempfile.TemporaryDirectory(prefix="spark-job-") as tmp:
            folder = Path(tmp)
            try:
                # up to 256 MiB unpacked: off the event loop
                await asyncio.to_thread(unpack_package, package, package_hash(package), folder)
            except HeadwaterError as exc:
                raise JobRefused(str(exc)) from None
            file = folder / entry
            if not file.is_file():
                raise JobRefused(f"the package has no file {entry!r}")
            if entry.endswith(".toml"):
                check_spec(file.read_bytes(), entry)
            else:
                await check_job(file.parent, file.name, self.limits)

    def kill(self, name: str) -> dict[str, Any]:
        """Withdraw the job's order and remove its record; KeyError for an unknown one."""
        job = self.jobs.pop(name, None)
        if job is None:
            raise KeyError(self.unknown(name))
        if job.node:
            self._stop(job.node, name)
        self.tokens.revoke(name)
        self._sent.pop(name, None)
        if not self.runs_package(job.package) and not self._keeping[job.package]:
            self.deletes.start(job.package)  # here and in the shared store, on a thread
        self._save()
        log.info("Spark job %r killed", name)
        return {"killed": name}

    def named(self, name: str) -> bool:  # submitted, or being checked now
        return name in self.jobs or name in self._checking

    def unknown(self, name: str) -> str:
        known = ", ".join(sorted(self.jobs)[:20]) or "none"
        return f"no Spark job named {name[:64]!r} (submitted: {known})"

    def _stop(self, node: str, name: str) -> None:
        self.master.nodes.send(
            node, pb.NodeCommand(stop=pb.StopContainer(topology=name, kind=KIND))
        )

    # -- placement and reports ---------------------------------------------------
    def _place(self, job: SparkJob) -> None:
        workers = [w for w in self.master.nodes.workers() if self.master.nodes.online(w)]
        if not workers:
            return
        load = dict.fromkeys(workers, 0)
        for other in self.jobs.values():
            if other.node in load:
                load[other.node] += 1
        job.node = min(workers, key=lambda w: (load[w], w))
        self._send(job)
        log.info("Spark job %r goes to worker %s", job.name, job.node)

    def _send(self, job: SparkJob) -> None:
        record = self.master.nodes.records.get(job.node)
        if record is not None and record.queue is not None:
            order = job.order(self.master.http_url, self.tokens.text(job.name))
            record.queue.put_nowait(order)
            self._sent[job.name] = record.queue

    def tick(self) -> None:
        """Orders to (re)attached workers, jobs off long-offline ones, the latest reports."""
        changed = False
        records = self.master.nodes.records
        for job in self.jobs.values():
            if job.finished:
                continue  # a once job that succeeded is not run again
            record = records.get(job.node) if job.node else None
            now = time.monotonic()
            heard = record is not None and now - record.last_seen <= NODE_OFFLINE_AFTER_S
            if record is not None and record.queue is not None and heard:
                if self._sent.get(job.name) is not record.queue:
                    self._send(job)  # a new session: the worker may have restarted
                changed |= self._take_report(job, record.status)
                continue
            gone_since = record.last_seen if record is not None else self._started
            if not job.node or now - gone_since > NODE_OFFLINE_AFTER_S:
                if job.node:
                    log.warning("worker %s is offline: Spark job %r moves", job.node, job.name)
                before = job.node
                job.node = ""
                self._place(job)
                changed |= job.node != before
        self._reconcile()
        if changed:
            self._save()

    def _take_report(self, job: SparkJob, status: pb.NodeStatus | None) -> bool:
        """Keep what the job's worker last said of it; whether its state changed."""
        reported = status.spark_jobs[:MAX_REPORTED] if status else []
        found = next((s for s in reported if s.name == job.name), None)
        if found is None or found.package != job.package:
            return False
        before = (job.status.get("state"), job.status.get("runs"))
        job.status = status_view(found)
        return before != (found.state, found.runs)

    def _reconcile(self) -> None:
        """Stop a job a worker runs that the master does not give it (moved or killed)."""
        for node_id, record in self.master.nodes.records.items():
            if record.queue is None or record.status is None:
                continue
            for s in record.status.spark_jobs[:MAX_REPORTED]:  # a node's word, bounded
                job = self.jobs.get(s.name)
                if (job is None or job.node != node_id) and name_problem(s.name) is None:
                    self._stop(node_id, s.name)

    async def run(self) -> None:
        """``tick`` every second, for ever."""
        while True:
            await asyncio.sleep(1.0)
            try:
                self.tick()
            except Exception:  # a bug must not end the loop that keeps jobs placed
                log.exception("Spark jobs tick")

    # -- views and packages ------------------------------------------------------
    def view(self, job: SparkJob) -> dict[str, Any]:
        s = job.status
        online = bool(job.node) and self.master.nodes.online(job.node)
        state = s.get("state", "starting") if online else "waiting for a worker"
        if job.node and not online:
            state = f"worker {job.node} offline"
        if job.finished:
            state = "succeeded"
        return {
            "name": job.name,
            "entry": job.entry,
            "package": job.package,
            "mode": job.mode,
            "every_s": job.every_s,
            "spark_master": job.spark_master or "local",
            "params": job.params,
            "landing": job.landing,
            "warehouse": job.warehouse,
            "registers": job.registers,
            "submitted": job.submitted,
            "node": job.node,
            "state": state,
            "runs": s.get("runs", 0),
            "last_run": s.get("last_run"),
            "rows_read": (s.get("last_run") or {}).get("rows_read", 0),
            "rows_written": (s.get("last_run") or {}).get("rows_written", 0),
            "last_error": s.get("error", ""),
            "restarts": s.get("restarts", 0),
            "crash_loop": s.get("crash_loop", ""),
            "updated": s.get("updated", 0.0),
        }

    def views(self) -> list[dict[str, Any]]:
        return [self.view(j) for _, j in sorted(self.jobs.items())]

    def runs_package(self, digest: str) -> bool:
        """Whether a job's files are that package."""
        return any(j.package == digest for j in self.jobs.values())

    def packages_of(self, node_id: str) -> set[str]:
        return {j.package for j in self.jobs.values() if j.node == node_id}

    def runs_on(self, name: str, node_id: str) -> bool:
        job = self.jobs.get(name)
        return job is not None and job.node == node_id
