"""Instances of a topology in the test's own process, for the runtime's unit tests."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from headwater import Topology
from headwater.common.runtime._instance import Instance

Opened = Callable[[Topology, int], Instance]


@pytest.fixture
def opened() -> Iterator[Opened]:
    """``opened(topology, task)``: that task's instance on one end of a socket pair, its
    component opened. The pair, and each instance's gateway wake-up pair (its thread never
    started), are closed after the test."""
    a, b = socket.socketpair()
    made: list[Instance] = []

    def open_one(topology: Topology, task: int) -> Instance:
        inst = Instance(topology, task, a)
        made.append(inst)
        inst.component_obj.open(inst.ctx)
        return inst

    yield open_one
    for inst in made:
        inst.gateway.close(0)  # never started: closes its wake-up pair
    a.close()
    b.close()
