"""The topology master: physical plan, container registration, heartbeats, metrics.

Containers register with their stmgr address; once all have, the master
publishes the physical plan (with every address) to every watcher, and again
whenever a container re-registers (a restart moves its address). Heartbeats
carry metrics and exception reports, served as JSON by ``_http``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from headwater.common.api import Topology
from headwater.common.plan import PhysicalPlan
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

log = logging.getLogger("headwater.tmaster")
OFFLINE_AFTER_S = 5.0


class TopologyMaster(pb_grpc.TopologyMasterServicer):
    def __init__(self, topology: Topology, plan: PhysicalPlan) -> None:
        self.topology = topology
        self.plan = plan
        self.state = "RUNNING"
        self.revision = 0
        self.started = time.time()
        self.containers: dict[int, pb.ContainerInfo] = {}
        self.last_heartbeat: dict[int, float] = {}
        self.metrics: dict[str, dict[str, float]] = {}
        self.exceptions: deque[dict[str, Any]] = deque(maxlen=200)
        self._watchers: set[asyncio.Queue[pb.PhysicalPlan]] = set()

    # -- gRPC ------------------------------------------------------------------
    async def Register(self, request: pb.RegisterRequest, context: Any) -> pb.RegisterResponse:
        if request.topology != self.topology.name:
            return pb.RegisterResponse(
                accepted=False, reason=f"this master runs {self.topology.name!r}"
            )
        info = request.container
        old = self.containers.get(info.container)
        self.containers[info.container] = info
        self.last_heartbeat[info.container] = time.monotonic()
        if old is None or old.stmgr_address != info.stmgr_address:
            log.info("container %d registered at %s", info.container, info.stmgr_address)
            self._publish()
        return pb.RegisterResponse(accepted=True)

    async def Watch(self, request: pb.WatchRequest, context: Any) -> AsyncIterator[pb.PhysicalPlan]:
        queue: asyncio.Queue[pb.PhysicalPlan] = asyncio.Queue()
        self._watchers.add(queue)
        try:
            current = self.physical_plan()
            if current is not None:
                yield current
            while True:
                yield await queue.get()
        finally:
            self._watchers.discard(queue)

    async def SendHeartbeat(self, request: pb.Heartbeat, context: Any) -> pb.HeartbeatAck:
        self.last_heartbeat[request.container] = time.monotonic()
        for m in request.metrics:
            self.metrics.setdefault(m.scope, {})[m.name] = m.value
        for e in request.exceptions:
            self.exceptions.append(
                {
                    "task": e.task_id,
                    "component": e.component,
                    "message": e.message,
                    "traceback": e.traceback,
                    "time_ms": e.time_ms,
                }
            )
        return pb.HeartbeatAck(plan_revision=self.revision)

    # -- plan ------------------------------------------------------------------
    def physical_plan(self) -> pb.PhysicalPlan | None:
        if len(self.containers) < self.plan.containers:
            return None
        return pb.PhysicalPlan(
            topology=self.topology.name,
            revision=self.revision,
            state=self.state,
            containers=[self.containers[c] for c in sorted(self.containers)],
            instances=[
                pb.InstanceInfo(
                    task_id=i.task_id,
                    component=i.component,
                    component_index=i.index,
                    container=i.container,
                )
                for i in self.plan.instances
            ],
        )

    def set_state(self, state: str) -> None:
        self.state = state
        self._publish()

    def _publish(self) -> None:
        self.revision += 1
        plan = self.physical_plan()
        if plan is not None:
            for q in self._watchers:
                q.put_nowait(plan)

    # -- views (JSON) ------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        now = time.monotonic()
        return {
            "name": self.topology.name,
            "state": self.state,
            "plan_revision": self.revision,
            "uptime_s": round(time.time() - self.started, 1),
            "containers": [
                {
                    "container": c,
                    "stmgr": info.stmgr_address,
                    "pid": info.pid,
                    "online": now - self.last_heartbeat.get(c, 0) < OFFLINE_AFTER_S,
                }
                for c, info in sorted(self.containers.items())
            ],
            "components": [
                {
                    "name": c.name,
                    "kind": c.kind,
                    "parallelism": c.parallelism,
                    "inputs": [
                        {"component": i.component, "stream": i.stream, "grouping": str(i.grouping)}
                        for i in c.inputs
                    ],
                    "outputs": [{"stream": s.name, "fields": list(s.fields)} for s in c.outputs],
                }
                for c in self.topology.components
            ],
        }

    def metrics_view(self) -> dict[str, Any]:
        tasks: dict[str, dict[str, Any]] = {}
        components: dict[str, dict[str, float]] = {}
        for inst in self.plan.instances:
            m = dict(self.metrics.get(f"task:{inst.task_id}", {}))
            m_out = {"component": inst.component, "container": inst.container, **m}
            tasks[str(inst.task_id)] = m_out
            agg = components.setdefault(inst.component, {})
            for k in (
                "emitted",
                "executed",
                "acked",
                "failed",
                "backpressure_ms",
                "restarts",
                "exceptions",
                "serialization_errors",
            ):
                agg[k] = agg.get(k, 0.0) + m.get(k, 0.0)
        containers = {
            scope.split(":", 1)[1]: values
            for scope, values in self.metrics.items()
            if scope.startswith("container:")
        }
        return {
            "topology": self.topology.name,
            "components": components,
            "tasks": tasks,
            "containers": containers,
        }
