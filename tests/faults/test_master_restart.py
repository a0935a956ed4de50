"""The master killed (SIGKILL) in the middle of a checkpoint while readings flow.

Checkpoints are taken every second, so a kill at any moment is most likely
in the middle of one. The master comes back on the same ports and state dir;
the worker and the agents re-attach by themselves, the cloud topology master
resumes from its last complete checkpoint, and every reading is counted
exactly once at the cloud sink.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ..integration._daemons import Daemons
from ..integration._support import landed_dead_letters, wait_for
from ..integration.test_edge_cloud import (
    SITES,
    Sensors,
    SteadySensors,
    _agent_args,
    _node,
    _start_cluster,
)
from ..integration.test_iot import SENSORS, _expected, _site_rows
from ._report import record

pytestmark = pytest.mark.cluster


def test_master_killed_mid_checkpoint_loses_and_duplicates_nothing(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    daemons.start_master()
    args = {s: _agent_args(mosquitto, s, daemons.grpc) for s in SITES}
    _worker, _agents, out = _start_cluster(daemons, mosquitto, tmp_path, args, master=False)
    readings = list(SENSORS["readings"](2, 3, 60))
    publisher = SteadySensors(sensors, [(t, json.dumps(r).encode()) for t, r in readings], 20)
    publisher.start()
    try:
        wait_for(lambda: publisher.sent["site0"] >= 60, 30, "the first readings out")
        # the kill lands while a checkpoint is in progress, with some complete before it
        wait_for(
            lambda: (
                (daemons.api("/api/v1/topologies/iot/checkpoints")["latest_complete"] or 0) >= 2
            ),
            30,
            "two complete checkpoints",
        )
        wait_for(
            lambda: any(
                c["state"] == "IN_PROGRESS"
                for c in daemons.api("/api/v1/topologies/iot/checkpoints")["checkpoints"]
            ),
            30,
            "a checkpoint in progress",
            interval=0.01,
        )
        before = daemons.api("/api/v1/topologies/iot/checkpoints")["latest_complete"]
        master = daemons.procs[0]
        master.kill()
        master.wait(10)
        killed = time.monotonic()
        daemons.restart_master()
        nodes = {"w1", "gw-site0", "gw-site1"}
        wait_for(
            lambda: {n["id"] for n in daemons.api("/api/v1/nodes") if n["online"]} == nodes,
            60,
            "the worker and both agents attached again",
        )
        detect = time.monotonic() - killed
        # recovered: the cloud domain completes a checkpoint past the one it had
        wait_for(
            lambda: (
                (daemons.api("/api/v1/topologies/iot/checkpoints")["latest_complete"] or 0) > before
            ),
            60,
            "a new complete checkpoint",
        )
        recover = time.monotonic() - killed
        wait_for(lambda: not publisher.is_alive(), 120, "every reading published")
        expected = _expected([r for _, r in readings])
        wait_for(
            lambda: _site_rows(out / "site_windows") == expected,
            120,
            "every closed window, each reading counted once",
        )
        assert len(expected) == 2 * 5  # the newest window of every sensor stays open
        wait_for(
            lambda: all(_node(daemons, f"gw-{s}")["backlog_batches"] == 0 for s in SITES),
            60,
            "both outboxes confirmed and empty",
        )
        assert landed_dead_letters(out) == []
        for n in sorted(nodes):
            assert _node(daemons, n)["health"] == "ok", _node(daemons, n)["reasons"]
        record(
            "master SIGKILLed mid-checkpoint, restarted",
            detect_s=detect,
            recover_s=recover,
            readings=len(readings),
            lost=0,
            duplicated=0,
        )
    finally:
        publisher.stop.set()
        publisher.join(30)
