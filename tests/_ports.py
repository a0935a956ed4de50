"""Free loopback ports for the tests' servers, none handed out twice in a row.

The kernel gives a port that was just bound and closed to the next ``bind(0)`` often enough
that three calls for one daemon's three ports have returned the same one twice (a master
then refuses to start: "one of this daemon's own ports already"). So a process remembers
the ports it handed out lately and never gives one of them again.
"""

from __future__ import annotations

import threading
from collections import deque

from headwater.common._ports import free_ports

_RECENT = 4096  # of ~28,000 ephemeral ports: far more than a test asks for at once
_given: deque[int] = deque(maxlen=_RECENT)
_lock = threading.Lock()


def free_port() -> int:
    """A port on 127.0.0.1 that no one was listening on just now, and that this process has
    not handed out among its last few thousand."""
    with _lock:
        while True:
            [port] = free_ports(1)
            if port not in _given:
                _given.append(port)
                return port
