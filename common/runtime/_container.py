"""A container process: one stream manager and the instances placed on it.

It registers with the topology master, receives the physical plan (peer
addresses), heartbeats metrics, starts one OS process per local instance
and restarts any that die. SIGTERM stops everything in order.

Run as ``python -m headwater.common.runtime.container --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# gRPC's fork handlers abort a child forked while its threads run; this
# process forks instances (exec follows at once), so turn them off before
# grpc loads.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

import grpc

from .._loader import load_topology
from ..plan import pack_round_robin, validate
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._procs import spawn, terminate
from ._stmgr import StreamManager

log = logging.getLogger("headwater.container")
HEARTBEAT_S = 1.0


class Container:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.topology = load_topology(args.topology_file, args.topology)
        validate(self.topology)
        self.plan = pack_round_robin(self.topology, args.containers)
        self.id = args.container
        self.workdir = Path(args.workdir)
        self.socket_path = str(self.workdir / f"c{self.id}.sock")
        self.incarnation = time.time_ns()
        self.exceptions: list[dict[str, Any]] = []
        self.stmgr = StreamManager(self.topology, self.plan, self.id, self.exceptions.append)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.restart_at: dict[int, float] = {}
        self.backoff: dict[int, float] = {}
        self.stopping = asyncio.Event()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        await self.stmgr.start_local_server(self.socket_path)
        self.address = await self.stmgr.start_peer_server(self.args.host)
        log.info("container %d: stmgr at %s, ipc %s", self.id, self.address, self.socket_path)
        for inst in self.plan.in_container(self.id):
            self._spawn(inst.task_id)
        tasks = [
            loop.create_task(self._master_session()),
            loop.create_task(self._supervise()),
            loop.create_task(self._expire()),
        ]
        await self.stopping.wait()
        log.info("container %d stopping", self.id)
        for task in list(self.stmgr.conns):
            self.stmgr.send_control(task, {"type": "stop"})
        await asyncio.get_running_loop().run_in_executor(
            None, terminate, list(self.procs.values()), 3.0
        )
        for t in tasks:
            t.cancel()
        await self.stmgr.close()

    def _spawn(self, task: int) -> None:
        args = [
            "-m",
            "headwater.common.runtime.instance",
            "--topology-file",
            self.args.topology_file,
            "--task",
            str(task),
            "--socket",
            self.socket_path,
        ]
        if self.args.topology:
            args += ["--topology", self.args.topology]
        self.procs[task] = spawn(args, log_path=str(self.workdir / f"task-{task}.log"))

    async def _supervise(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            now = time.monotonic()
            for task, proc in list(self.procs.items()):
                if proc.poll() is None:
                    continue
                if task not in self.restart_at:
                    delay = self.backoff.get(task, 0.0)
                    self.backoff[task] = min(max(delay * 2, 0.25), 5.0)
                    self.restart_at[task] = now + delay
                    self.stmgr.restarts[task] = self.stmgr.restarts.get(task, 0) + 1
                    log.warning(
                        "task %d exited with %s; restarting in %.2fs", task, proc.returncode, delay
                    )
                elif now >= self.restart_at[task]:
                    del self.restart_at[task]
                    self._spawn(task)
            for task in self.stmgr.conns:  # healthy for a while: reset the backoff
                if self.backoff.get(task) and task not in self.restart_at:
                    self.backoff[task] = max(0.0, self.backoff[task] - 0.01)

    async def _expire(self) -> None:
        interval = self.stmgr.rc.message_timeout_s / 3
        while True:
            await asyncio.sleep(min(interval, 1.0))
            self.stmgr.expire_roots()

    async def _master_session(self) -> None:
        delay = 0.1
        while True:
            try:
                async with grpc.aio.insecure_channel(self.args.tmaster) as channel:
                    stub = pb_grpc.TopologyMasterStub(channel)
                    info = pb.ContainerInfo(
                        container=self.id,
                        stmgr_address=self.address,
                        pid=os.getpid(),
                        incarnation=self.incarnation,
                    )
                    await stub.Register(
                        pb.RegisterRequest(topology=self.topology.name, container=info)
                    )
                    hb = asyncio.get_running_loop().create_task(self._heartbeat(stub))
                    try:
                        watch = stub.Watch(
                            pb.WatchRequest(topology=self.topology.name, container=self.id)
                        )
                        delay = 0.1
                        async for plan in watch:
                            self._on_plan(plan)
                    finally:
                        hb.cancel()
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                log.debug("topology master unreachable: %s", exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _on_plan(self, plan: pb.PhysicalPlan) -> None:
        self.stmgr.set_peers({c.container: c.stmgr_address for c in plan.containers})
        self.stmgr.set_active(plan.state == "RUNNING")

    async def _heartbeat(self, stub: pb_grpc.TopologyMasterStub) -> None:
        while True:
            metrics = [pb.Metric(scope=s, name=n, value=v) for s, n, v in self.stmgr.metrics()]
            metrics.append(pb.Metric(scope=f"container:{self.id}", name="pid", value=os.getpid()))
            for task, proc in self.procs.items():
                metrics.append(pb.Metric(scope=f"task:{task}", name="pid", value=proc.pid))
            reports, self.exceptions[:] = list(self.exceptions), []
            await stub.SendHeartbeat(
                pb.Heartbeat(
                    topology=self.topology.name,
                    container=self.id,
                    incarnation=self.incarnation,
                    metrics=metrics,
                    exceptions=[
                        pb.ExceptionReport(
                            task_id=r["task"],
                            component=r["component"],
                            message=r["message"],
                            traceback=r["traceback"],
                            time_ms=int(time.time() * 1000),
                        )
                        for r in reports
                    ],
                )
            )
            await asyncio.sleep(HEARTBEAT_S)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="headwater-container")
    p.add_argument("--topology-file", required=True)
    p.add_argument("--topology", default=None)
    p.add_argument("--container", type=int, required=True)
    p.add_argument("--containers", type=int, required=True)
    p.add_argument("--tmaster", required=True, help="host:port of the topology master")
    p.add_argument("--workdir", required=True)
    p.add_argument("--host", default="127.0.0.1")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s %(levelname)s container={args.container} %(name)s: %(message)s",
    )
    asyncio.run(Container(args).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
