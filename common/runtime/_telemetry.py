"""What a container tells its topology master every second: metrics and the reports since.

The stream manager's metrics, the container's own (pid, epoch, each task's
pid, the ingest-log offsets a complete checkpoint holds), and the exception
and dead-letter reports that arrived since the last heartbeat. Reports are
kept typed here and become protobuf only in the heartbeat; a heartbeat that
was not delivered gives its reports back, to go with the next one (the last
``KEEP_REPORTS``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .._clock import SYSTEM_CLOCK, Clock
from ..wire._control import DeadLetterReport, ExceptionReport, LogCommitted
from ..wire.proto import runtime_pb2 as pb
from ._stmgr import StreamManager

Report = ExceptionReport | DeadLetterReport
KEEP_REPORTS = 200


class Telemetry:
    def __init__(
        self,
        topology: str,
        container: int,
        incarnation: int,
        stmgr: StreamManager,
        pids: Callable[[], dict[int, int]],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._topology = topology
        self._container = container
        self._incarnation = incarnation
        self._stmgr = stmgr
        self._pids = pids
        self._clock = clock
        self.reports: list[Report] = []
        self.log_committed: dict[str, float] = {}  # metric name -> offset

    def add_report(self, report: Report) -> None:
        self.reports.append(report)

    def note_log_committed(self, msg: LogCommitted) -> None:
        """Offsets a complete checkpoint holds, for the agent's ingest-log retention."""
        for p, offset in msg.offsets.items():
            self.log_committed[f"log_committed:{msg.path}#p{p}"] = float(offset)

    def heartbeat(self) -> tuple[pb.Heartbeat, list[Report]]:
        """The next heartbeat, and the reports it takes (``give_back`` them if undelivered)."""
        scope = f"container:{self._container}"
        metrics = [pb.Metric(scope=s, name=n, value=v) for s, n, v in self._stmgr.metrics()]
        metrics.append(pb.Metric(scope=scope, name="pid", value=os.getpid()))
        metrics.append(pb.Metric(scope=scope, name="epoch", value=self._stmgr.epoch))
        for task, pid in self._pids().items():
            metrics.append(pb.Metric(scope=f"task:{task}", name="pid", value=pid))
        for name, offset in self.log_committed.items():
            metrics.append(pb.Metric(scope=scope, name=name, value=offset))
        reports, self.reports = self.reports, []
        now_ms = int(self._clock.time() * 1000)
        beat = pb.Heartbeat(
            topology=self._topology,
            container=self._container,
            incarnation=self._incarnation,
            metrics=metrics,
            exceptions=[
                pb.ExceptionReport(
                    task_id=r.task,
                    component=r.component,
                    message=r.message,
                    traceback=r.traceback,
                    time_ms=now_ms,
                )
                for r in reports
            ],
        )
        return beat, reports

    def give_back(self, reports: list[Report]) -> None:
        """Reports of a heartbeat not delivered: they go with the next one."""
        self.reports[:0] = reports
        del self.reports[:-KEEP_REPORTS]
