"""tests/_ports.py: the tests' loopback ports come from below the kernel's ephemeral range, a
slice per xdist worker, never twice in a row, and from ``bind(0)`` where there is no room."""

from __future__ import annotations

import socket

import pytest

from . import _ports


def test_ports_are_the_worker_s_own_below_the_ephemeral_range_and_free() -> None:
    ports = [_ports.free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(p in _ports.worker_ports() and p < _ports.ephemeral_low() for p in ports)
    for p in ports[-5:]:  # free when handed out: a server can bind it
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_each_worker_has_a_slice_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    slices = []
    for worker in ("gw0", "gw1", "gw2", "gw3"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        slices.append(set(_ports.worker_ports()))
    assert all(len(s) == _ports.SLICE for s in slices)
    assert len(set().union(*slices)) == 4 * _ports.SLICE
    monkeypatch.delenv("PYTEST_XDIST_WORKER")  # no xdist: the first slice
    assert set(_ports.worker_ports()) == slices[0]


def test_no_room_below_the_ephemeral_range_falls_back_to_bind_0(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_ports, "ephemeral_low", lambda: 1024)
    assert not _ports.worker_ports()
    port = _ports.free_port()
    assert 1024 <= port < 65536
