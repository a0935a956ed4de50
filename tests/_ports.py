"""Free loopback ports for the tests' servers: below the kernel's ephemeral range, a slice of
their own per xdist worker, none handed out twice in a row.

A port picked with ``bind(0)`` comes from the kernel's ephemeral range (32768-60999 here),
which is also where the kernel takes the local port of every outgoing connection: between
the pick and the daemon's own bind, any process's connection could take it (on three workers
a master refused to start, "port 60865 on 127.0.0.1 is taken by pid ... (a pytest worker)").
So the tests' ports come from below that range, where the kernel hands out none by itself;
each xdist worker from its own slice, so two workers never pick the same port; a port is tried
with a bind first (nothing holds it now), chosen at random in the slice (a pytest run inside
a test, which shares its worker's slice, seldom meets its ports) and never handed out again
among this process's last ones. Where the ephemeral range leaves no room below it, a port
comes from ``bind(0)``, as before.
"""

from __future__ import annotations

import os
import random
import threading
from collections import deque
from pathlib import Path

from headwater.common._exceptions import HeadwaterError
from headwater.common._ports import check_free, free_ports

LOW = 10_000  # below: the ports of well-known services
SLICE = 2_000  # a worker's ports: the range below 32768 holds 11 workers' slices
_RECENT = 1_000  # of a slice's 2,000: far more than a test asks for at once
_given: deque[int] = deque(maxlen=_RECENT)
_lock = threading.Lock()
_random = random.Random()


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def worker_ports() -> range:
    """This xdist worker's slice (``gw0`` or no worker: the first), or an empty range where
    the ephemeral range leaves no room."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    n = int(worker[2:]) if worker[:2] == "gw" and worker[2:].isdigit() else 0
    top = ephemeral_low()
    slices = (top - LOW) // SLICE
    if slices < 1:
        return range(0)
    start = LOW + (n % slices) * SLICE
    return range(start, start + SLICE)


def _bindable(port: int) -> bool:
    try:
        check_free("127.0.0.1", port)  # a bind as servers make it (TIME_WAIT does not count)
    except HeadwaterError:
        return False
    return True


def free_port() -> int:
    """A port on 127.0.0.1 that nothing held just now, from this worker's slice below the
    ephemeral range, that this process has not handed out among its last thousand."""
    ports = worker_ports()
    with _lock:
        for _ in range(4 * SLICE if ports else 0):
            port = _random.choice(ports)
            if port not in _given and _bindable(port):
                _given.append(port)
                return port
        while True:  # no room below the ephemeral range (or the slice is full): bind(0)
            [port] = free_ports(1)
            if port not in _given:
                _given.append(port)
                return port
