"""Simulated edge agents for the fleet bench: many per process, each its own enrolled node.

``python -m bench.fleet`` starts a few of these processes (``python -m bench.fleet_agents``),
each holding a share of the fleet on one asyncio loop. Every simulated agent is a node on
the wire as a real one is, with the node's own code:

* its identity: ``NodeCredentials`` in its own workdir, enrolled with the join token (its own
  key and CSR, signed by the cluster CA through the master's join port), kept in ``tls/``;
* its session: ``MasterSession`` (mutual TLS with its own certificate, ``Attach`` with its
  ``NodeInfo`` and labels ``fleet=sim``, ``site=siteK``; ``ReportStatus`` every 2 s and
  after each order; the
  node's reconnect backoff, 0.2 s to 10 s with full jitter, after a lost session);
* its orders: a run order's package is fetched from the master (``FetchPackage``), checked
  against its hash and unpacked into the workdir (``Packages``), as a real node does before
  it starts anything; a repeated order for what it runs is ignored; stop, set-state and
  revise orders are kept.

What is simulated: the agent neither loads the topology nor starts the edge subgraph's
topology master, container or instances. From the order on it reports the edge subgraph as
a real agent whose subgraph runs does: ``TOPOLOGY/0`` among its containers, ``revision:T``,
its components' and tasks' counters (growing at 10 readings/s), its checkpoint figures, an
uplink connected and its MQTT ingestion's counters: 44 metrics, the keys a real
agent with that subgraph reports.

With the bench (JSON lines): stdin takes ``{"do": "hello", ...}`` (where the master is, the
join token, which agents), then ``{"do": "enrol"}`` and ``{"do": "attach"}``; its end stops
the process. Stdout carries events as arrays (times in epoch seconds): ``["h", -1, t]`` the
process is ready, ``["e", i, t]`` agent ``i`` enrolled, ``["a", i, t]`` a session began
(``Attach`` sent), ``["c", i, t, which]`` an order came, ``["f", i, t]`` a run order's package
was fetched and unpacked, ``["r", i, sent, answered, running]`` a status report was answered
(the master answers after it stored it in the registry its REST API reads).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from headwater.common._health import FAILED, Health
from headwater.common.node._identity import NodeCredentials
from headwater.common.node._leader import LeaderEpoch
from headwater.common.node._node import RECONNECT
from headwater.common.node._packages import Packages
from headwater.common.node._session import MasterSession
from headwater.common.security import JoinToken, Transport
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

log = logging.getLogger("bench.fleet")
Emit = Callable[[list[Any]], None]
COMPONENTS = ("readings", "parse")
TASK_KEYS = ("executed", "emitted", "received", "busy_ns", "backpressure_ms", "in_queue_frames")
RATE = 10.0  # readings per second the simulated subgraph says it handles
ENROLLING = 8  # enrolments under way at once in one process
NICE = 10
"""The simulator yields the CPU to the master: on a real fleet the agents run elsewhere."""


def node_id(index: int) -> str:
    return f"fleet-{index:04d}"


class _Timed(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Times each ``ReportStatus`` from its sending to the master's answer."""

    def __init__(self, answered: Callable[[float, float, pb.NodeStatus], None]) -> None:
        self.answered = answered

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        sent = time.time()
        call = await continuation(details, request)
        method = details.method  # bytes, in the grpc of this writing
        if (method.decode() if isinstance(method, bytes) else method).endswith("/ReportStatus"):
            await call  # raises as the caller's await would
            self.answered(sent, time.time(), request)
        return call


class TimedTransport(Transport):
    """The node's transport, its channels timing the status reports (for the bench alone)."""

    def __init__(self, folder: Path, timed: _Timed) -> None:
        super().__init__(folder)
        self.timed = timed

    def channel(self, address: str, to: str, options: Any = ()) -> grpc.aio.Channel:
        c = self.credentials()
        creds = grpc.ssl_channel_credentials(c.ca, c.key, c.cert)
        opts = [*options, ("grpc.ssl_target_name_override", to)]
        return grpc.aio.secure_channel(address, creds, options=opts, interceptors=[self.timed])


class SimAgent:
    """One simulated agent (on the process's event loop)."""

    def __init__(
        self, index: int, workdir: Path, master: str, token: JoinToken, emit: Emit
    ) -> None:
        self.index = index
        self.node_id = node_id(index)
        self.labels = {"fleet": "sim", "site": f"site{index % 10}"}
        self.emit = emit
        self.started = time.monotonic()
        self.health = Health(self.node_id)
        self.credentials = NodeCredentials(
            workdir,
            "agent",
            self.node_id,
            lambda: self.session.address(),  # noqa: PLW0108 (the session is made below)
            join_token=token,
        )
        self.credentials.transport = TimedTransport(
            self.credentials.tls_dir, _Timed(self._answered)
        )
        self.packages = Packages(workdir)
        self.running: dict[str, tuple[str, int, float]] = {}  # topology -> package, rev, since
        self.states: dict[str, str] = {}
        self.session = MasterSession(
            self.credentials,
            lambda: master,
            self.health,
            RECONNECT,
            self.info,
            self.status,
            self.obey,
            LeaderEpoch(workdir),  # as a node's: a deposed leader's orders are refused
        )

    async def enrol(self) -> None:
        await self.credentials.enrol(RECONNECT, self.health)
        self.emit(["e", self.index, time.time()])

    def info(self) -> pb.NodeInfo:
        self.emit(["a", self.index, time.time()])  # asked for at each Attach
        return pb.NodeInfo(
            node_id=self.node_id, kind="agent", labels=self.labels, version="fleet-sim"
        )

    def _answered(self, sent: float, answered: float, status: pb.NodeStatus) -> None:
        self.emit(["r", self.index, sent, answered, int(bool(status.containers))])

    async def obey(self, stub: pb_grpc.ClusterStub, command: pb.NodeCommand) -> None:
        """One order, as ``Node._obey`` takes it: one that fails is said in health."""
        which = command.WhichOneof("command")
        self.emit(["c", self.index, time.time(), which])
        try:
            await self._obey(stub, command, which)
        except (asyncio.CancelledError, grpc.RpcError, OSError):
            raise
        except Exception as exc:
            log.exception("order %s failed", which)
            self.health.set(f"order:{which}", FAILED, f"{type(exc).__name__}: {exc}")

    async def _obey(
        self, stub: pb_grpc.ClusterStub, command: pb.NodeCommand, which: str | None
    ) -> None:
        if which == "run":
            run = command.run
            known = self.running.get(run.topology)
            if known is not None and known[0] == run.package:
                return  # a re-attach repeats the orders
            await self.packages.fetched(stub, run)  # fetched, checked, unpacked
            self.emit(["f", self.index, time.time()])
            self.running[run.topology] = (run.package, 1, time.monotonic())
        elif which == "revise":
            r = command.revise
            await self.packages.fetched(stub, pb.RunContainer(package=r.package, entry=r.entry))
            if r.topology in self.running:
                package, _, since = self.running[r.topology]
                self.running[r.topology] = (package, r.revision, since)
        elif which == "set_state":
            self.states[command.set_state.topology] = command.set_state.state
        elif which == "stop":
            self.running.pop(command.stop.topology, None)

    def status(self) -> pb.NodeStatus:
        now = time.monotonic()
        s = pb.NodeStatus(
            node_id=self.node_id,
            containers=[f"{t}/0" for t in self.running],
            health=self.health.state,
            reasons=self.health.reasons(),
        )
        m = s.metrics
        m["uptime_s"] = round(now - self.started, 1)
        m["outbox_budget_bytes"] = float(64 << 20)
        m["edge_max_tasks"] = 16.0
        m["uplink_connected"] = 1.0 if self.running else 0.0
        n = float(int((now - self.started) * RATE))
        for key in ("received", "appended", "acked"):
            m[f"mqtt_{key}"] = n
        for key in ("dropped_qos0", "queued", "queued_bytes", "write_errors", "paused_s"):
            m[f"mqtt_{key}"] = 0.0
        m["mqtt_connected"], m["mqtt_paused"], m["ingest_trimmed"] = 1.0, 0.0, 0.0
        for t, (_, revision, since) in self.running.items():
            _subgraph(s, t, revision, float(int((now - since) * RATE)))
        return s


def _subgraph(s: pb.NodeStatus, t: str, revision: int, n: float) -> None:
    """What a real agent reports of a running edge subgraph ``t`` that has handled ``n``."""
    m = s.metrics
    m[f"revision:{t}"] = float(revision)
    m[f"edge_tasks:{t}"] = float(len(COMPONENTS))
    m[f"revision_failed:{t}"] = 0.0
    for task, c in enumerate(COMPONENTS, start=1):
        for key in ("emitted", "executed"):
            m[f"component:{t}/{c}:{key}"] = n
        m[f"component:{t}/{c}:exceptions"] = m[f"component:{t}/{c}:dead_letters"] = 0.0
        for key in TASK_KEYS:
            m[f"edge_task:{t}/{c}/{task}:{key}"] = n if key in ("executed", "emitted") else 0.0
    checkpoint = {"latest": n // 10, "duration_ms": 4.0, "size_bytes": 512.0, "started": n // 10}
    for key, value in {**checkpoint, "in_progress": 0.0}.items():
        m[f"checkpoint:{t}:{key}"] = value
    s.backlog_bytes, s.backlog_batches = 0, 0
    uplink = {"outbox_bytes": 0.0, "uplink_sent": n, "uplink_confirmed": n}
    s.uplinks.append(pb.UplinkState(topology=t, connected=True, metrics=uplink))


class Share:
    """This process's share of the fleet, driven by the bench's lines on stdin."""

    def __init__(self, hello: dict[str, Any]) -> None:
        token = JoinToken.parse(hello["token"])
        work = Path(hello["work"])
        self.agents = [
            SimAgent(i, work / node_id(i), hello["master"], token, self.emit)
            for i in hello["agents"]
        ]
        self.sessions: list[asyncio.Task[None]] = []
        self._out: list[str] = []

    def emit(self, event: list[Any]) -> None:
        self._out.append(json.dumps(event))

    async def flushing(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            self.flush()

    def flush(self) -> None:
        if self._out:
            sys.stdout.write("\n".join(self._out) + "\n")
            sys.stdout.flush()
            self._out.clear()

    async def enrol(self) -> None:
        gate = asyncio.Semaphore(ENROLLING)

        async def one(agent: SimAgent) -> None:
            async with gate:
                await agent.enrol()

        await asyncio.gather(*(one(a) for a in self.agents))

    def attach(self) -> None:
        loop = asyncio.get_running_loop()
        self.sessions = [loop.create_task(a.session.run()) for a in self.agents]

    async def stop(self) -> None:
        for task in self.sessions:
            task.cancel()
        await asyncio.gather(*self.sessions, return_exceptions=True)
        self.flush()


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    hello = json.loads(await loop.run_in_executor(None, sys.stdin.readline))
    share = Share(hello)
    share.emit(["h", -1, time.time()])  # ready: the bench times nothing before this
    flushing = loop.create_task(share.flushing())
    enrolling: asyncio.Task[None] | None = None
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            do = json.loads(line)["do"]
            if do == "enrol":
                enrolling = loop.create_task(share.enrol())
            elif do == "attach":
                share.attach()
    finally:
        flushing.cancel()
        if enrolling is not None:
            enrolling.cancel()
        await share.stop()


def main() -> None:
    os.nice(NICE)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    asyncio.run(_serve())


if __name__ == "__main__":
    main()
