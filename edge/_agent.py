"""The edge agent daemon (``headwater agent``): a node on a gateway next to the sensors.

It finds the master (``--master HOST:PORT``, or zeroconf on the LAN),
attaches with its labels (site, capabilities) and ingests MQTT into its
durable log. For every topology with edge components its labels select, the
master orders it to run that edge subgraph: the agent hosts the subgraph's
own topology master (so the agent checkpoints while its link is down: its
own checkpoint domain) on a loopback port, and starts one edge container,
whose uplink carries the subgraph's output from a durable outbox straight to
the cloud containers that receive it (the master only says where they run;
``--ingress-proxy`` names an HTTP CONNECT proxy to reach them through).
Restart it at any moment: what it acknowledged to the broker is in the
durable log, the last complete edge checkpoint says how far the
subgraph got, and the outbox keeps what the cloud has not confirmed.

A live edit that touches edge components reaches the agent as a revise
order, which switches its edge subgraph at a checkpoint barrier, exactly as
the cloud does (``_revisions.py``); it reports the revision its subgraph
runs in its status (``revision:TOPOLOGY``), beside its edge domains'
checkpoints (``checkpoint:TOPOLOGY:FIELD``, for the master's ``/metrics``).

The agent keeps its orders on its own disk (``_orders.py``) and on start
resumes the edge subgraphs it was ordered to run from there, before it
reaches the master (which may be out of reach; ``_resume.py``). Its parts take what they
read, not the agent: its edge domains (``_domains.py``), its status figures
(``_edge_status.py``), its ingest log's retention (``_retention.py``).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import Any

import grpc

from headwater.common._discovery import SERVICE, find_master
from headwater.common._exceptions import HeadwaterError
from headwater.common._health import DEGRADED, FAILED
from headwater.common._ids import name_problem
from headwater.common._ports import check_free, grpc_server
from headwater.common._sandbox import RunAs
from headwater.common._stopping import until_stopped
from headwater.common.control import TopologyDispatch, TopologyMaster
from headwater.common.node import Node
from headwater.common.node._limits import DEFAULT_LIMITS, TopologyLimits
from headwater.common.plan import domain_args, edge_part
from headwater.common.runtime._container_config import FOOTPRINT_ENV
from headwater.common.runtime._procs import Proc
from headwater.common.runtime._threads import FOOTPRINTS
from headwater.common.security import TRUSTED, Identity, JoinToken, has_credentials
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._container import AGENT_ENV, BUDGET_ENV, DEFAULT_OUTBOX_BUDGET, PROXY_ENV, UPLINK_ENV
from ._domains import EdgeDomains
from ._edge_status import (
    add_domains,
    add_ingest,
    add_ingest_backlog,
    add_uplinks,
    backlog,
    outbox_full,
)
from ._ingest import MqttIngest, MqttSource
from ._ingest_log import share_readers
from ._orders import OrderBook, keep
from ._resume import Resume, master_moved
from ._retention import RETENTION_S, keep_trimmed
from ._revisions import EdgeRevisions

log = logging.getLogger("headwater.edge.agent")
INGEST_LOG_ENV = "HEADWATER_INGEST_LOG"
MAX_EDGE_TASKS = 16
"""The most tasks one topology's edge subgraph may have here that the master's health manager
scales to (``--max-edge-tasks``): the agent's footprint limit, reported as ``edge_max_tasks``."""
__all__ = ["INGEST_LOG_ENV", "MAX_EDGE_TASKS", "RETENTION_S", "Agent"]


class Agent(Node):
    def __init__(
        self,
        master: str | None,
        workdir: str | Path,
        *,
        node_id: str | None = None,
        labels: dict[str, str] | None = None,
        version: str = "",
        mqtt: MqttSource | None = None,
        outbox_budget: int = DEFAULT_OUTBOX_BUDGET,
        status_port: int | None = None,
        ingress_proxy: str = "",
        insecure: bool = False,
        join_token: JoinToken | None = None,
        footprint: str = "normal",
        limits: TopologyLimits = DEFAULT_LIMITS,
        isolation: str = "auto",
        max_edge_tasks: int = MAX_EDGE_TASKS,
    ) -> None:
        super().__init__(
            master or "",
            workdir,
            kind="agent",
            node_id=node_id,
            labels=labels,
            version=version,
            insecure=insecure,
            join_token=join_token,
            limits=limits,
            isolation=isolation if footprint == "normal" else "none",
        )
        if outbox_budget <= 0:
            raise ValueError(f"the outbox budget must be positive, got {outbox_budget}")
        self.outbox_budget = outbox_budget
        if footprint not in FOOTPRINTS:
            raise ValueError(f"the footprint is one of {', '.join(FOOTPRINTS)}, got {footprint!r}")
        # small: each edge container runs its instances on threads; single: and in this process
        self.footprint = footprint
        if max_edge_tasks < 1:
            raise ValueError(f"the most edge tasks is a positive number, got {max_edge_tasks}")
        self.max_edge_tasks = max_edge_tasks  # what the health manager may scale a subgraph to
        self.ingress_proxy = ingress_proxy  # HOST:PORT of an HTTP CONNECT proxy to the cloud
        self.ingest_path = self.workdir / "ingest"
        self.ingest: MqttIngest | None = None
        if mqtt is not None:
            self.ingest = MqttIngest(
                mqtt, self.ingest_path, should_pause=self.outbox_full, health=self.health
            )
        self.domains = EdgeDomains(self.workdir, self.health)
        self.tms: dict[str, TopologyMaster] = self.domains.tms  # one per edge subgraph
        self._server: grpc.aio.Server | None = None
        self.local_address = ""
        self.status_port = status_port
        self.states: dict[str, str] = {}  # activate/deactivate, as the master last said
        self.revisions = EdgeRevisions(
            self.tms,
            self.states,
            self.labels,
            self.code_dir,
            self.ordered,
            self._refused,
            self._code_user,
        )
        self.book = OrderBook(self.workdir / "orders.json")
        self.resume = Resume(self.workdir, self.code_dir, outbox_budget, self.health)

    # -- orders kept on disk ---------------------------------------------------------
    def ordered(self) -> None:
        runs = {**self.resume.unresumed, **self.orders}
        keep(self.book, self.health, self.master, runs, self.states, self.revisions.heard)

    def _resume(self) -> None:
        """Run again, from this agent's own disk, what it was last ordered to run."""
        try:
            kept = self.book.load()
        except HeadwaterError as exc:
            self.health.set("orders", FAILED, f"{exc}; waiting for the master's orders")
            return
        self.master = self.master or kept.master
        self.states.update(kept.states)
        self.revisions.resumed(kept.revisions)
        self.resume.start_kept(kept.runs, self.orders, self._start)

    async def run(self) -> None:
        if self.status_port is not None:  # taken: PortInUse before anything starts
            check_free("127.0.0.1", self.status_port, "--status-port")
        self.users.check()  # which user its topologies' code runs as: said once, after the ports
        if self.transport.secure and not has_credentials(self.tls_dir):
            # first start: the local links need the certificate too (nothing to resume yet);
            # a stop meanwhile ends the agent (it may never find or reach its master)
            if not self.master:
                await self._look_for_master()
            await until_stopped(self.stopping, self.enrol())
            if self.stopping.is_set():
                self.limits.close()
                return
        self._server = grpc_server()
        pb_grpc.add_TopologyMasterServicer_to_server(
            TopologyDispatch(self.tms, self._own_container), self._server
        )
        port = self.transport.bind(self._server, "127.0.0.1:0")
        await self._server.start()
        # the status page and ingest first: neither needs the master
        http = None
        if self.status_port is not None:
            from ._status import serve_status  # aiohttp (~9 MB): only for the status page

            try:
                http = await serve_status(self, self.status_port)
            except BaseException:  # taken since: stop the server, or it complains at exit
                await self._server.stop(None)
                raise
        self.local_address = f"127.0.0.1:{port}"
        given = bool(self.master)
        self._resume()  # before reaching the master: it may be out of reach
        rediscover: asyncio.Task[None] | None = None
        if not given and self.master:  # resumed with the master's last address: look anyway
            rediscover = asyncio.get_running_loop().create_task(self._rediscover())
        if self.ingest is not None:
            self.ingest.start()
        if not self.master:
            await self._look_for_master()
        retention = asyncio.get_running_loop().create_task(
            keep_trimmed(
                self.ingest,
                self.ingest_path,
                self.tms,
                self._ordered_topologies,
                self._retry_orders,
            )
        )
        revising = asyncio.get_running_loop().create_task(self.revisions.run())
        try:
            await super().run()
        finally:
            if rediscover is not None:
                rediscover.cancel()
            retention.cancel()
            revising.cancel()
            if http is not None:
                await http.cleanup()
            self.domains.stop()
            await self._server.stop(1.0)
            if self.ingest is not None:
                await asyncio.get_running_loop().run_in_executor(None, self.ingest.stop)

    async def _look_for_master(self) -> None:
        """No ``--master``: zeroconf on the LAN until it answers (the session clears the address
        once the master answers) or the agent is stopped (the address stays empty)."""
        why = f"no --master given: looking for one by zeroconf ({SERVICE}) on the LAN"
        self.health.set("master", DEGRADED, why)
        self.master = await until_stopped(self.stopping, find_master()) or ""

    def _own_container(self, context: Any, topology: str, container: int | None) -> str | None:
        """Its local topology masters hear this agent's own containers only (its certificate)."""
        identity = self.transport.identity(context)
        if identity == TRUSTED or identity == Identity("agent", self.node_id):
            return None
        return f"{identity or 'a caller without a certificate'} is not this agent"

    async def _rediscover(self) -> None:
        """Without ``--master``, a resumed agent starts with the address it kept; if zeroconf
        finds the master elsewhere, it moved: dial it there, and restart the edge containers
        (the supervisor does) so that their uplinks do too."""
        found = await master_moved(self.master)
        if found is None:
            return
        self.master = found
        self.ordered()
        for proc in list(self.containers.values()):
            proc.terminate()

    # -- edge subgraphs ------------------------------------------------------------
    def _start(self, run: pb.RunContainer, entry: Path) -> None:
        self.resume.started(run)
        entry = self.checked_entry(run)  # what the subgraph's master loads is what runs
        if run.topology not in self.tms:
            skeleton = self.revisions.skeleton(run.topology, run.package, run.entry)
            topology = edge_part(skeleton, self.labels)
            if not topology.components:
                self.error = f"no edge component of {run.topology!r} matches labels {self.labels}"
                log.error("%s", self.error)
                self.orders.pop((run.topology, run.container), None)
                return
            loader = self.revisions.loader(run.topology)
            state = self.revisions.start_state(run.topology)
            if not self.domains.open(run, topology, loader, state):  # a full disk: said
                asyncio.get_running_loop().call_later(2.0, self._start_again, run, entry)
                return
        self.supervisor.start(run, entry)  # checked against its zip above, once

    def _start_again(self, run: pb.RunContainer, entry: Path) -> None:
        if self.orders.get((run.topology, run.container)) is run:  # still ordered
            self._start(run, entry)

    # -- live edits ------------------------------------------------------------------
    def revise(self, order: pb.Revise) -> None:
        self.revisions.revise(order)

    def move_state(self, order: pb.MoveState) -> None:
        self.revisions.hand_in(order)

    def _refused(self, why: str) -> None:
        """A revision this agent cannot take: said in its status."""
        self.error = why
        log.error("%s", self.error)

    def container_module(self, run: pb.RunContainer) -> str:
        return "headwater.edge.container"

    def launch_container(
        self, run: pb.RunContainer, args: list[str], env: dict[str, str], log_path: Path
    ) -> Proc:
        if self.footprint != "single":
            return super().launch_container(run, args, env, log_path)
        from ._hosted import HostedContainer

        return HostedContainer(args[2:], env)  # after "-m headwater.edge.container"

    def container_run_as(self, run: pb.RunContainer) -> RunAs | None:
        return self._code_user(run.topology)

    def _code_user(self, topology: str) -> RunAs | None:
        if self.footprint != "normal":  # its instances run in the container, or in the agent
            return None
        run_as = self.code_user(topology)
        if run_as is not None:  # its edge spouts, as their topologies' users, read the log
            share_readers(self.ingest_path)
        return run_as

    def tmaster_address(self, run: pb.RunContainer) -> str:
        return self.local_address

    def container_domain(self, run: pb.RunContainer) -> list[str]:
        return domain_args("edge", self.labels)

    def container_env(self, run: pb.RunContainer) -> dict[str, str]:
        return {
            UPLINK_ENV: self.master,
            AGENT_ENV: self.node_id,
            BUDGET_ENV: str(self.outbox_budget),
            FOOTPRINT_ENV: "normal" if self.footprint == "normal" else "small",
            INGEST_LOG_ENV: str(self.ingest_path.resolve()),
            **({PROXY_ENV: self.ingress_proxy} if self.ingress_proxy else {}),
        }

    def set_state(self, topology: str, state: str) -> None:
        if self.states.get(topology) != state:
            self.states[topology] = state
            self.ordered()
        tm = self.tms.get(topology)
        if tm is not None and tm.user_state != state and topology not in self.revisions.holding:
            tm.set_state(state)
            log.info("edge subgraph of %r: %s", topology, state)

    def stopped(self, topology: str) -> None:
        self.states.pop(topology, None)
        self.revisions.forget(topology)
        self.resume.forget(topology)
        for reason in (f"orders:{topology}", f"order:{topology}", f"supervise:{topology}"):
            self.health.clear(reason)
        self.domains.close(topology)  # and its reasons
        if name_problem(topology, "topology name") is None:  # never a folder that climbs
            shutil.rmtree(self.workdir / topology, ignore_errors=True)

    # -- ingest log retention (_retention.py) ---------------------------------------
    def _retry_orders(self) -> None:
        if self.health.has("orders"):  # kept orders could not be saved: try again
            self.ordered()

    def _ordered_topologies(self) -> set[str]:
        """Ordered subgraphs, running or not yet (unresumed, starting): until each reports,
        the log is not trimmed (they may read it from further back than the running ones)."""
        return {t for t, _ in self.orders} | {t for t, _ in self.resume.unresumed}

    # -- backlog and status (_edge_status.py) -------------------------------------------
    def backlog(self) -> tuple[int, int]:
        """Bytes and batches not yet confirmed by the cloud, in every edge subgraph's outbox."""
        return backlog(self.tms, self.resume.disk_backlog)

    def outbox_full(self) -> bool:
        """MQTT acknowledgement stops while any edge subgraph's outbox is over its budget."""
        return outbox_full(self.tms, self.outbox_budget)

    def status(self) -> pb.NodeStatus:
        s = super().status()
        s.backlog_bytes, s.backlog_batches = self.backlog()
        s.metrics["outbox_budget_bytes"] = float(self.outbox_budget)
        add_uplinks(s, self.tms, self.health)
        add_domains(s, self.tms, self.revisions.running, self.labels, self.node_id, self.health)
        s.metrics["edge_max_tasks"] = float(self.max_edge_tasks)
        if self.ingest is not None:
            add_ingest(s, self.ingest.stats, self.outbox_full())
            log_path = str(self.ingest_path.resolve())
            add_ingest_backlog(s, self.tms, self.ingest.stats.ends, log_path)
        s.health = self.health.state  # as just updated
        del s.reasons[:]
        s.reasons.extend(self.health.reasons())
        return s
