"""A process that imports headwater spawns children safely while its gRPC channels are busy.

gRPC's fork handlers crash a fork-then-exec child before its exec when a channel is busy
at the fork (grpcio 1.80 and later: "epoll_wait: Bad file descriptor"); a launcher whose
container died so was left waiting for it. ``import headwater`` turns them off."""

from __future__ import annotations

import os
import subprocess
import sys

PROGRAM = """
import threading
from concurrent import futures

import headwater  # first, as any program of a user's or a daemon imports it
import grpc
from headwater.common.runtime._procs import spawn

server = grpc.server(futures.ThreadPoolExecutor(2))
echo = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("e", {"E": echo}),))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
call = grpc.insecure_channel(f"127.0.0.1:{port}").unary_unary("/e/E")
done = threading.Event()

def busy():
    while not done.is_set():
        call(b"x")

threading.Thread(target=busy, daemon=True).start()
codes = [spawn(["-c", "pass"]).wait() for _ in range(100)]
done.set()
server.stop(None)
print(sum(c != 0 for c in codes), len(codes))
"""


def test_a_hundred_children_spawned_beside_a_busy_channel_all_run() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "100"], done.stderr
    assert "Bad file descriptor" not in done.stderr
