"""``headwater master``: the long-running master daemon."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import ssl
from pathlib import Path

import grpc
from aiohttp import web

from headwater.common._ports import bind_grpc, check_free, claimed, grpc_server
from headwater.common.security import TokenStore, Transport
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._cluster import add_services
from ._docker import DockerOptions, DockerScheduler, open_scheduler
from ._enrolment import Enrolment, EnrolmentService
from ._health_parts import HEALTH_INTERVAL_S
from ._http import make_app
from ._master import Master
from ._scheduler import PLACEMENT_DELAY_S
from ._traffic import TrafficCounter

log = logging.getLogger("headwater.master")
INSECURE_WARNING = (
    "INSECURE: --insecure: the REST API asks for no token and the gRPC links are "
    "plaintext; anyone who reaches this master can run code on every node"
)


async def serve(
    host: str,
    port: int,
    http_port: int,
    state_dir: Path,
    ready_file: Path | None = None,
    advertise: bool = True,
    *,
    join_port: int = 7072,
    http_host: str = "127.0.0.1",
    http_cert: Path | None = None,
    http_key: Path | None = None,
    insecure: bool = False,
    docker: DockerOptions | None = None,
    placement_delay: float = PLACEMENT_DELAY_S,
    health_interval: float = HEALTH_INTERVAL_S,
) -> None:
    """Serve until SIGTERM/SIGINT. The REST API listens on ``http_host`` (loopback by
    default: reaching it from elsewhere is a choice), over TLS with ``http_cert`` and
    ``http_key``; it needs tokens unless ``insecure``. ``docker``: run cloud containers in
    Docker containers (the Docker scheduler) instead of on attached workers;
    ``placement_delay``: how long containers that wait for a worker wait after a new worker
    attaches (``WorkerScheduler``); ``health_interval``: how often each topology's health
    manager gets a sample (``_health_loop.py``). A port that is taken raises ``PortInUse``
    (naming the option that chose it) and stops what had started."""
    # every port checked before anything is made or started: a taken one stops the master
    # at once with PortInUse (one line from the CLI), and no port is shared (grpc_server)
    check_free(host, port, "--port")
    if not insecure:
        check_free(host, join_port, "--join-port")
    check_free(http_host, http_port, "--http-port")
    async with contextlib.AsyncExitStack() as running:  # stops what started, in reverse
        traffic = TrafficCounter()
        server = grpc_server(
            interceptors=[traffic],
            options=[
                ("grpc.max_send_message_length", 64 << 20),
                ("grpc.max_receive_message_length", 64 << 20),
            ],
        )
        running.push_async_callback(server.stop, 1.0)  # started or not: no noise at exit
        enrolment = None
        if insecure:
            transport = Transport.insecure()
        else:
            enrolment = Enrolment(state_dir / "tls", TokenStore(state_dir / "tokens.json"))
            transport = Transport.of(enrolment.ca.master_credentials())
        bound = transport.bind(server, f"{host}:{port}", option="--port")
        master = Master(state_dir, grpc_address=f"{host}:{bound}", placement_delay=placement_delay)
        master.traffic = traffic
        master.nodes.enrolment = enrolment
        joins: grpc.aio.Server | None = None
        if enrolment is not None:  # the join port: TLS without a client certificate, Join only
            enrolment.online = master.nodes.online
            joins = grpc_server()
            running.push_async_callback(joins.stop, 1.0)
            pb_grpc.add_EnrolmentServicer_to_server(EnrolmentService(enrolment), joins)
            creds = enrolment.ca.master_credentials()
            master.join_port = bind_grpc(
                joins,
                f"{host}:{join_port}",
                grpc.ssl_server_credentials([(creds.key, creds.cert)]),
                "--join-port",
            )
            master.ca_fingerprint = enrolment.ca.fingerprint
        add_services(server, master, transport)
        scheduler: DockerScheduler | None = None
        if docker is not None:
            scheduler = open_scheduler(master, docker, f"{host}:{bound}")
            master.scheduler = scheduler
        # every deployment back before any node is heard: a node attaching to a master that
        # has not resumed yet would be told to stop what it runs
        await master.resume()
        master.rollouts.resume()  # an unfinished model rollout rolls back (fail safe)
        await server.start()
        if joins is not None:
            await joins.start()
        if insecure:
            log.warning(INSECURE_WARNING)
        tls = None
        if http_cert is not None and http_key is not None:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(http_cert, http_key)
        runner = web.AppRunner(make_app(master, insecure), access_log=None)
        await runner.setup()
        running.push_async_callback(runner.cleanup)
        site = web.TCPSite(runner, http_host, http_port, ssl_context=tls)
        with claimed(http_host, http_port, "--http-port"):
            await site.start()
        spark_jobs = asyncio.get_running_loop().create_task(master.spark_jobs.run())
        running.callback(spark_jobs.cancel)
        master.health.interval = health_interval
        health = asyncio.get_running_loop().create_task(master.health.run())
        running.callback(health.cancel)
        if scheduler is not None:  # after the join port is known: it mints join tokens
            reconciler = asyncio.get_running_loop().create_task(scheduler.run())
            running.callback(reconciler.cancel)
        http_bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        scheme = "https" if tls else "http"
        info = {
            "grpc": f"{host}:{bound}",
            "http": f"{scheme}://{http_host}:{http_bound}",
            "join_port": master.join_port,
            "ca_fingerprint": master.ca_fingerprint,
            "pid": os.getpid(),
        }
        reachable = socket.getfqdn() if http_host in ("", "0.0.0.0", "::") else http_host
        if ":" in reachable:  # an IPv6 address
            reachable = f"[{reachable}]"
        master.http_url = f"{scheme}://{reachable}:{http_bound}"  # a job's registry
        log.info("master: gRPC %s, API %s, state %s", info["grpc"], info["http"], state_dir)
        if ready_file is not None:
            tmp = ready_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(info))
            tmp.replace(ready_file)
        if advertise:
            from headwater import __version__
            from headwater.common._discovery import advertise as announce

            zc = await announce(host, bound, info["http"], __version__)  # type: ignore[arg-type]
            running.push_async_callback(zc.async_close)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("master stopping")
