"""A Spark job driver's status file and beats: what its worker and ``headwater spark jobs`` read.

``WORKDIR/status.json``, replaced whole (a temporary file, then ``os.replace``) at
each change and every ``STATUS_EVERY_S`` while the driver lives::

    {"name": "daily-report", "state": "running", "mode": "continuous", "pid": 4242,
     "runs": 3,
     "last_run": {"started": 1764340000.1, "ended": null, "ok": null,
                  "rows_read": 120, "rows_written": 8, "error": ""},
     "queries": [{"name": "sums", "batches": 4, "rows": 120}],
     "updated": 1764340012.5}

``state``: starting (Spark starts), running (a run, or a continuous job's queries),
waiting (``--every``: until the next run), succeeded (a once run that ended well),
failed (the error is ``last_run.error``, one line), stopped (SIGTERM or Ctrl-C).
``runs`` counts the runs started, across the driver's restarts (read back from the
file it finds). ``queries``: the streaming queries of the last run, by name, with
their micro-batches and input rows. ``rows_read``: those rows plus what the job
counted (``ctx.count(read=)``); ``rows_written``: its upserts plus ``ctx.count(written=)``.

The beat file (``common/runtime/_procs.py`` ``beat_file(WORKDIR, 0)``, as a
topology container's) is touched every second by a thread of its own, so that
the worker's supervisor tells a busy driver (Spark working) from a hung one.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headwater.common.runtime._procs import beat_file

STATES = ("starting", "running", "waiting", "succeeded", "failed", "stopped")
MODES = ("once", "every", "continuous")
STATUS_EVERY_S = 2.0
BEAT_EVERY_S = 1.0


def read_status(workdir: Path) -> dict[str, Any]:
    """The status file in ``workdir`` as written, or {} (none, or unreadable)."""
    try:
        doc = json.loads((workdir / "status.json").read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


class QueryStats:
    """The micro-batches and input rows of a run's streaming queries, by query name, from
    their progress events (a no-data progress repeats its batch id: counted once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queries: dict[str, list[int]] = {}  # name -> [batches, rows]
        self._last: dict[str, int] = {}  # run id -> last batch id counted

    def progress(self, name: str | None, run_id: str, batch_id: int, rows: int) -> None:
        with self._lock:
            entry = self._queries.setdefault(name or "", [0, 0])
            if self._last.get(run_id) != batch_id:
                self._last[run_id] = batch_id
                entry[0] += 1
            entry[1] += rows

    def rows(self) -> int:
        with self._lock:
            return sum(rows for _, rows in self._queries.values())

    def doc(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {"name": name, "batches": b, "rows": r}
                for name, (b, r) in sorted(self._queries.items())
            ]


class Status:
    """The status of one driver process, written to ``WORKDIR/status.json`` (module doc)."""

    def __init__(self, workdir: Path, name: str, mode: str) -> None:
        self.path = workdir / "status.json"
        previous = read_status(workdir)
        self.previous_run: dict[str, Any] = dict(previous.get("last_run") or {})
        runs = previous.get("runs")
        self._lock = threading.Lock()
        self.doc: dict[str, Any] = {
            "name": name,
            "state": "starting",
            "mode": mode,
            "pid": os.getpid(),
            "runs": runs if isinstance(runs, int) and runs >= 0 else 0,
            "last_run": self.previous_run or None,
            "queries": [],
            "updated": 0.0,
        }
        self.stats = QueryStats()
        self.counted: Callable[[], tuple[int, int]] = lambda: (0, 0)  # the ctx's (read, written)

    def begin_run(self, counted: Callable[[], tuple[int, int]]) -> None:
        """A run starts now: a new ``last_run``; ``counted`` gives the job's own counts."""
        with self._lock:
            self.stats = QueryStats()
            self.counted = counted
            self.doc["runs"] += 1
            self.doc["state"] = "running"
            self.doc["last_run"] = {
                "started": time.time(),
                "ended": None,
                "ok": None,
                "rows_read": 0,
                "rows_written": 0,
                "error": "",
            }
        self.write()

    def end_run(self, error: str = "") -> None:
        """The run ended, well (no ``error``) or not."""
        with self._lock:
            self._refresh()
            run = self.doc["last_run"]
            if run is not None:
                run["ended"] = time.time()
                run["ok"] = not error
                run["error"] = error
        self.write()

    def set(self, state: str, error: str | None = None) -> None:
        """A new ``state``; ``error`` (one line) into ``last_run`` when given."""
        assert state in STATES, state
        with self._lock:
            self.doc["state"] = state
            if error is not None:
                if self.doc["last_run"] is None:
                    self.doc["last_run"] = {
                        "started": time.time(),
                        "ended": time.time(),
                        "ok": False,
                        "rows_read": 0,
                        "rows_written": 0,
                        "error": "",
                    }
                self.doc["last_run"]["error"] = error
        self.write()

    def write(self) -> None:
        """Refresh the counts and replace the file whole."""
        with self._lock:
            self._refresh()
            self.doc["updated"] = time.time()
            text = json.dumps(self.doc, indent=1)
            tmp = self.path.with_name(f".status-{os.getpid()}.json.tmp")
            try:
                tmp.write_text(text)
                os.replace(tmp, self.path)
            except OSError as exc:  # a full disk: the log says it, the job goes on
                print(f"status not written: {exc}", flush=True)

    def _refresh(self) -> None:
        """The running run's counts and queries, now (under the lock)."""
        run = self.doc["last_run"]
        if run is None or run.get("ended") is not None or self.doc["state"] != "running":
            return
        read, written = self.counted()
        run["rows_read"] = self.stats.rows() + read
        run["rows_written"] = written
        self.doc["queries"] = self.stats.doc()


class Heart:
    """A thread that touches the beat file every second and rewrites the status every
    ``STATUS_EVERY_S``, until ``stop()``."""

    def __init__(self, workdir: Path, status: Status) -> None:
        self.beat = beat_file(workdir, 0)
        self.status = status
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="driver-beat")

    def start(self) -> Heart:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        last = 0.0
        while True:
            with contextlib.suppress(OSError):  # a workdir gone: the worker sees the silence
                self.beat.touch()
            now = time.monotonic()
            if now - last >= STATUS_EVERY_S:
                last = now
                self.status.write()
            if self._stop.wait(BEAT_EVERY_S):
                return
