"""``headwater master``: the long-running master daemon."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import ssl
from pathlib import Path

import grpc
from aiohttp import web

from headwater.common._exceptions import HeadwaterError
from headwater.common._ports import bind_grpc, check_free, claimed, grpc_server
from headwater.common._stopping import until_stopped
from headwater.common.security import TokenStore, Transport
from headwater.common.state._store_args import SharedStore
from headwater.common.statemgr import LocalStateManager, Record, StateManager, under
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._blob_store import cluster_name, open_blobs
from ._cluster import add_services
from ._docker import DockerOptions, DockerScheduler, open_scheduler
from ._enrolment import Enrolment, EnrolmentService
from ._failover import FAILOVER_AFTER_S, Failover
from ._health_parts import HEALTH_INTERVAL_S
from ._http import make_app
from ._master import Master
from ._scheduler import PLACEMENT_DELAY_S
from ._standby import lead_first, reachable
from ._traffic import TrafficCounter

log = logging.getLogger("headwater.master")
NO_BLOB_STORE_WARNING = (
    "the records are in ZooKeeper but the packages and model artifacts only on this "
    "master's disk: a standby that takes over holds the deployments whose packages it lacks "
    "and cannot serve these artifacts; give every master the same --blob-store "
    "s3://BUCKET/PREFIX"
)
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
    state: StateManager | None = None,
    failover_after: float = FAILOVER_AFTER_S,
    blob_store: SharedStore | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT. The REST API listens on ``http_host`` (loopback by
    default: reaching it from elsewhere is a choice), over TLS with ``http_cert`` and
    ``http_key``; it needs tokens unless ``insecure``. ``docker``: run cloud containers in
    Docker containers (the Docker scheduler) instead of on attached workers;
    ``placement_delay``: how long containers that wait for a worker wait after a new worker
    attaches (``WorkerScheduler``); ``health_interval``: how often each topology's health
    manager gets a sample (``_health_loop.py``); ``state``: where the records are kept
    (``open_state``; local files in ``state_dir`` by default), closed when the master
    stops; ``failover_after``: how long a worker with a shared checkpoint store may be
    offline before its containers move to the workers sharing it (``_failover.py``; not with
    Docker, whose scheduler places them); ``blob_store``: the S3-compatible bucket the
    masters share for packages and model artifacts (``--blob-store``; None: on
    ``state_dir`` alone). A port that is taken raises ``PortInUse`` (naming the option that
    chose it) and stops what had started."""
    # every port checked before anything is made or started: a taken one stops the master
    # at once with PortInUse (one line from the CLI), and no port is shared (grpc_server)
    check_free(host, port, "--port")
    if not insecure:
        check_free(host, join_port, "--join-port")
    check_free(http_host, http_port, "--http-port")
    if state is None:
        state_dir.mkdir(parents=True, exist_ok=True)
        state = LocalStateManager(state_dir)
    if blob_store is None and not isinstance(state, LocalStateManager):
        log.warning(NO_BLOB_STORE_WARNING)
    tls = None
    if http_cert is not None and http_key is not None:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(http_cert, http_key)
    stop = asyncio.Event()  # SIGTERM, Ctrl-C: from here on, standing by included
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # standby masters (ZooKeeper state): nothing is bound for nodes until this one leads
    led = await until_stopped(stop, lead_first(state, (host, port), (http_host, http_port), tls))
    if led is None or stop.is_set():  # (or it won as it was stopped: it steps down at once)
        if led is not None and led[0] is not None:
            led[0].resign()
        log.info("master stopping (it stood by)")
        state.close()  # and with its ZooKeeper session, its place in the election
        return
    leadership, http_port = led
    async with contextlib.AsyncExitStack() as running:  # stops what started, in reverse
        running.callback(state.close)  # last: whatever stops before it may still save
        if leadership is not None:
            running.callback(leadership.resign)  # a standby leads at once
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
            tokens = TokenStore(Record(state, "tokens.json"))
            enrolment = Enrolment(under(state, "tls"), tokens)
            transport = Transport.of(enrolment.ca.master_credentials())
        bound = transport.bind(server, f"{host}:{port}", option="--port")
        blobs = None
        if blob_store is not None:  # the cluster's corner of the bucket: its CA names it
            blobs = open_blobs(
                blob_store, cluster_name(enrolment.ca.fingerprint if enrolment else "")
            )
            running.callback(blobs.close)
        master = Master(
            state_dir,
            grpc_address=f"{host}:{bound}",
            state=state,
            placement_delay=placement_delay,
            blobs=blobs,
        )
        master.traffic = traffic
        master.nodes.epoch = leadership.epoch if leadership is not None else 0
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
        else:  # workers: a lost one's containers move where its checkpoint store is shared
            failover = Failover(master.orders, master.nodes.records, failover_after)
            moving = asyncio.get_running_loop().create_task(failover.run())
            running.callback(moving.cancel)
        http_bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        scheme = "https" if tls else "http"
        info = {
            "grpc": f"{host}:{bound}",
            "http": f"{scheme}://{http_host}:{http_bound}",
            "join_port": master.join_port,
            "ca_fingerprint": master.ca_fingerprint,
            "pid": os.getpid(),
        }
        master.http_url = f"{scheme}://{reachable(http_host)}:{http_bound}"  # a job's registry
        log.info(
            "master: gRPC %s, API %s, state %s, blobs %s",
            info["grpc"],
            info["http"],
            state.describe("").rstrip("/"),
            blobs.describe() if blobs is not None else state_dir,
        )
        if ready_file is not None:
            tmp = ready_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(info))
            tmp.replace(ready_file)
        if advertise:
            from headwater import __version__
            from headwater.common._discovery import advertise as announce

            zc = await announce(host, bound, info["http"], __version__)  # type: ignore[arg-type]
            running.push_async_callback(zc.async_close)
        if leadership is not None:  # a leader that may no longer lead stops at once
            lost = loop.create_task(leadership.lost.wait())
            lost.add_done_callback(lambda _: stop.set())
            running.callback(lost.cancel)
        await stop.wait()
        if leadership is not None and leadership.lost.is_set():
            raise HeadwaterError(
                "this master stopped leading (its ZooKeeper connection was suspended or lost; "
                "another master may lead now): start it again, and it stands by"
            )
        log.info("master stopping")
