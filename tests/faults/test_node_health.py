"""A node's health shows a crash loop where the node can see it.

An agent hosts the topology master of its edge subgraph, so an edge component that
cannot start makes the agent ``failed`` with the component and the cause. A worker
restarts its container processes, so a container that keeps exiting makes the worker
``failed``. Before, both stayed ``ok`` (`headwater nodes` said nothing) while
nothing ran.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from .._wait import wait_for
from ..integration._daemons import Daemons
from ._report import record

CRASHING = Path(__file__).parent / "topologies" / "crashing_edge.py"
pytestmark = pytest.mark.cluster


def _node(daemons: Daemons, name: str) -> dict[str, Any]:
    return next(n for n in daemons.api("/api/v1/nodes") if n["id"] == name)


def test_crash_loops_show_in_the_health_of_the_agent_and_the_worker(daemons: Daemons) -> None:
    daemons.start_master()
    daemons.start_worker("w1", env={"HW_TEST_CRASH_CONTAINER": "1"})
    daemons.start_agent("gw-1", "--master", daemons.grpc, "--label", "site=one")
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "the worker and the agent online",
    )
    wait_for(
        lambda: {_node(daemons, n)["health"] for n in ("w1", "gw-1")} == {"ok"}, 30, "both healthy"
    )
    t0 = time.monotonic()
    daemons.cli("submit", str(CRASHING))

    def failed(name: str, words: tuple[str, ...]) -> dict[str, Any] | None:
        n = _node(daemons, name)
        hit = n["health"] == "failed" and any(all(w in r for w in words) for r in n["reasons"])
        return n if hit else None

    agent = wait_for(
        lambda: failed(
            "gw-1",
            (
                "crashing: crash loop: component 'model'",
                "failing again",
                "RuntimeError: the model file is missing",
            ),
        ),
        90,
        "the agent failed",
    )
    agent_s = time.monotonic() - t0
    worker = wait_for(
        lambda: failed("w1", ("crash loop: container 0 of 'crashing'", "exited with 1")),
        90,
        "the worker failed",
    )
    worker_s = time.monotonic() - t0
    listing = daemons.cli("nodes")
    assert "failed" in listing
    assert "crash loop: component 'model'" in listing, listing
    assert "crash loop: container 0 of 'crashing'" in listing, listing
    print(agent["reasons"], worker["reasons"])
    record(
        "agent: an edge component crash-looping (node health)",
        detect_s=round(agent_s, 1),
        recover_s=None,
        readings=0,
        lost=0,
        duplicated=0,
    )
    record(
        "worker: a container crash-looping (node health)",
        detect_s=round(worker_s, 1),
        recover_s=None,
        readings=0,
        lost=0,
        duplicated=0,
    )
