"""A topology master (tmaster) in a process of its own: ``python -m headwater.cloud.tmaster``.

``headwater run`` starts one for its topology; in a cluster the master daemon
hosts the topology masters instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path

from headwater.common._ports import PortInUse, check_free, claimed, grpc_server
from headwater.common.control import TopologyDispatch, TopologyMaster
from headwater.common.plan import load_topology, pack_round_robin, validate
from headwater.common.security import TokenStore, Transport
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

log = logging.getLogger("headwater.tmaster")


async def serve(args: argparse.Namespace) -> None:
    topology = load_topology(args.topology_file, args.topology)
    validate(topology)
    tm = TopologyMaster(topology, pack_round_robin(topology, args.containers), Path(args.state_dir))
    check_free(args.host, args.http_port, "--http-port")  # before anything starts
    server = grpc_server()
    pb_grpc.add_TopologyMasterServicer_to_server(TopologyDispatch({topology.name: tm}), server)
    transport = Transport.insecure() if args.insecure else Transport(args.tls_dir)
    try:
        grpc_port = transport.bind(server, f"{args.host}:{args.grpc_port}", option="--grpc-port")
    except BaseException:
        await server.stop(None)
        raise
    await server.start()
    if args.grpc_ready_file:  # its containers may register now, while its API starts
        _write_atomically(args.grpc_ready_file, {"grpc": f"{args.host}:{grpc_port}"})
    # imported now, on a thread: aiohttp is the largest import here, and meanwhile this loop
    # serves the containers' registrations
    await asyncio.get_running_loop().run_in_executor(None, _import_api)
    from aiohttp import web

    from ._http import make_app

    tokens = None if args.insecure else TokenStore(args.tokens)
    runner = web.AppRunner(make_app(tm, tokens), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.http_port)
    try:
        with claimed(args.host, args.http_port, "--http-port"):
            await site.start()
    except BaseException:
        await runner.cleanup()
        await server.stop(None)
        raise
    http_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    ready = {
        "grpc": f"{args.host}:{grpc_port}",
        "http": f"http://{args.host}:{http_port}",
        "pid": os.getpid(),
        "topology": topology.name,
    }
    _write_atomically(args.ready_file, ready)
    log.info(
        "topology master for %r: gRPC %s, HTTP %s", topology.name, ready["grpc"], ready["http"]
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    coordinator = loop.create_task(tm.run_coordinator())
    await stop.wait()
    coordinator.cancel()
    await runner.cleanup()
    await server.stop(0.5)


def _import_api() -> None:
    from . import _http  # noqa: F401  (aiohttp with it)


def _write_atomically(path: str, doc: dict[str, object]) -> None:
    tmp = Path(path + ".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.rename(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="headwater-tmaster")
    p.add_argument("--topology-file", required=True)
    p.add_argument("--topology", default=None)
    p.add_argument("--containers", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--grpc-port", type=int, default=0)
    p.add_argument("--http-port", type=int, default=0)
    p.add_argument("--ready-file", required=True)
    p.add_argument(
        "--grpc-ready-file",
        default=None,
        help="written first, once its gRPC port listens (its containers register then); "
        "--ready-file once its HTTP API listens too",
    )
    p.add_argument("--state-dir", required=True, help="where the checkpoint catalogue persists")
    p.add_argument("--tokens", default=None, help="the tokens file its API accepts tokens of")
    p.add_argument("--tls-dir", default=None, help="credentials: its gRPC port is mutual TLS")
    p.add_argument("--insecure", action="store_true", help="an API without tokens, plain gRPC")
    args = p.parse_args(argv)
    if not (args.tokens and args.tls_dir) and not args.insecure:
        p.error(
            "give --tokens FILE and --tls-dir DIR (tokens for its API, credentials for its "
            "gRPC port) or --insecure (neither)"
        )
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s tmaster %(name)s: %(message)s",
    )
    try:
        asyncio.run(serve(args))
    except PortInUse as exc:  # a restart on its old ports, taken since
        print(f"headwater-tmaster: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
