"""Where a local run's logs are: the record ``headwater run`` leaves for ``headwater logs``.

A run writes ``STATE/logs/NAME.json`` (STATE: ``state_dir()``; NAME %-quoted) as it starts: its work
directory, its process id, and which container runs which task. At its stop it marks the
record ended if its logs outlive it (``--keep-logs``, the default, a ``--workdir`` of the
user's, a crash loop), and removes it with them otherwise. A new run of a topology replaces
the record of the name's last one. The record is not in STATE itself: ``*.json`` there are
the running topology masters ``headwater status`` finds.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from headwater.common.plan import PhysicalPlan


@dataclass(frozen=True)
class RunLogs:
    """One local run's logs: ``tmaster.log``, ``container-C.log``, ``task-T.log`` in
    ``workdir``; ``tasks`` maps each container to its tasks and their components."""

    topology: str
    workdir: Path
    pid: int
    started: float
    ended: float | None
    tasks: dict[int, dict[int, str]]

    @property
    def running(self) -> bool:
        """Not ended, and its launcher alive (one killed outright never marks its end)."""
        if self.ended is not None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def tmaster_log(self) -> Path:
        return self.workdir / "tmaster.log"

    def container_log(self, container: int) -> Path:
        return self.workdir / f"container-{container}.log"

    def task_log(self, task: int) -> Path:
        return self.workdir / f"task-{task}.log"

    def container_of(self, task: int) -> int | None:
        return next((c for c, tasks in self.tasks.items() if task in tasks), None)


def logs_dir(state: Path) -> Path:
    return state / "logs"


def record_run(state: Path, topology: str, workdir: Path, plan: PhysicalPlan) -> Path:
    """Record a run starting now (in this process) with its logs in ``workdir``."""
    tasks: dict[str, dict[str, str]] = {}
    for i in plan.instances:
        tasks.setdefault(str(i.container), {})[str(i.task_id)] = i.component
    # the name quoted: a topology a local run accepts may be named with a / or ..
    path = logs_dir(state) / f"{quote(topology, safe='')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "topology": topology,
        "workdir": str(workdir),
        "pid": os.getpid(),
        "started": time.time(),
        "ended": None,
        "tasks": tasks,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)
    return path


def end_run(path: Path, workdir: Path, logs_kept: bool) -> None:
    """The run of this process in ``workdir`` recorded at ``path`` stopped: mark its record
    ended, or remove it with its logs (unless another run of the name has replaced it)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    ours = isinstance(doc, dict) and (doc.get("pid"), doc.get("workdir")) == (
        os.getpid(),
        str(workdir),
    )
    if not ours or doc.get("ended") is not None:
        return
    if not logs_kept:
        path.unlink(missing_ok=True)
        return
    doc["ended"] = time.time()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)


def recorded_runs(state: Path) -> dict[str, RunLogs]:
    """The runs whose logs this machine knows, by topology name (unreadable records skipped)."""
    runs: dict[str, RunLogs] = {}
    for path in sorted(logs_dir(state).glob("*.json")):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
            doc = json.loads(path.read_text())
            runs[doc["topology"]] = RunLogs(
                topology=str(doc["topology"]),
                workdir=Path(doc["workdir"]),
                pid=int(doc["pid"]),
                started=float(doc["started"]),
                ended=None if doc.get("ended") is None else float(doc["ended"]),
                tasks={
                    int(c): {int(t): str(comp) for t, comp in tasks.items()}
                    for c, tasks in doc["tasks"].items()
                },
            )
    return runs
