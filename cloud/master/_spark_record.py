"""A Spark job as the master keeps it: its record, the order a worker runs, its status view.

``SparkJob`` is one record of STATE/spark_jobs.json (what was submitted, the
worker it was given, the worker's last report, the models it may register);
``order`` is the ``RunContainer`` of kind ``KIND`` a worker is sent;
``status_view`` is a worker's report of a job as the REST API shows it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from headwater.common.wire.proto import runtime_pb2 as pb

KIND = "spark-job"


@dataclass
class SparkJob:
    name: str
    package: str
    entry: str
    mode: str = "once"
    every_s: float = 0.0
    spark_master: str = ""
    params: dict[str, str] = field(default_factory=dict)
    landing: str = ""
    warehouse: str = ""
    submitted: float = field(default_factory=time.time)
    node: str = ""
    status: dict[str, Any] = field(default_factory=dict)  # the worker's last report
    registers: list[str] = field(default_factory=list)  # the models it may register

    @property
    def finished(self) -> bool:
        return self.mode == "once" and self.status.get("state") == "succeeded"

    def order(self, registry_url: str = "", token: str = "") -> pb.NodeCommand:
        """The worker's order; a registering job's carries the API's URL and its token."""
        token = token if registry_url else ""  # no API to reach: no registry
        job = pb.SparkJob(
            mode=self.mode,
            every_s=self.every_s,
            spark_master=self.spark_master,
            params=self.params,
            landing=self.landing,
            warehouse=self.warehouse,
            registers=self.registers if token else [],
            registry_url=registry_url if token else "",
            registry_token=token,
        )
        run = pb.RunContainer(
            topology=self.name, package=self.package, entry=self.entry, kind=KIND, job=job
        )
        return pb.NodeCommand(run=run)


def status_view(s: pb.SparkJobStatus) -> dict[str, Any]:
    """A worker's report of one job, as the REST API shows it (finite numbers only: NaN is
    no JSON a browser parses)."""
    last = None
    if _finite(s.started):
        last = {
            "started": s.started,
            "ended": _finite(s.ended) or None,
            "ok": s.ok,
            "rows_read": s.rows_read,
            "rows_written": s.rows_written,
            "error": s.error,
        }
    return {
        "state": s.state,
        "mode": s.mode,
        "pid": s.pid,
        "runs": s.runs,
        "last_run": last,
        "error": s.error,
        "restarts": s.restarts,
        "crash_loop": s.crash_loop,
        "updated": _finite(s.updated),
    }


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0
