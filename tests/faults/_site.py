"""One site of the IoT example across real daemons: a master, a worker and one agent.

Shared by the fault tests that restart an agent: how the site starts, what its readings
are, and how exactly the cloud's output matches them (lost and duplicated readings).
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from .._ports import free_port
from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ..integration.test_edge_cloud import PIPELINE, _status
from ..integration.test_iot import SENSORS, _expected, _site_rows

AGENT = "gw-site0"


def readings(count: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` readings per sensor of site0 (three sensors), one second apart."""
    return [(t, r) for t, r in SENSORS["readings"](1, 3, count)]


def messages(rows: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, bytes]]:
    return [(t, json.dumps(r).encode()) for t, r in rows]


@dataclass
class Site:
    daemons: Daemons
    out: Path
    agent_args: list[str]
    status_port: int
    with_id: bool
    worker: psutil.Process
    worker_id: bool = True
    agent: psutil.Process | None = None

    def start_agent(self) -> psutil.Process:
        self.agent = self.daemons.start_agent(AGENT, *self.agent_args, with_id=self.with_id)
        return self.agent

    def stop_agent(self, sig: int = signal.SIGKILL) -> int | None:
        """Signal the agent; wait for it and every process under it (containers, instances:
        they die with it) to be gone. Returns its exit code."""
        assert self.agent is not None
        under = self.agent.children(recursive=True)
        self.agent.send_signal(sig)
        code = self.agent.wait(30)
        _gone, alive = psutil.wait_procs(under, timeout=30)
        assert not alive, f"still running after the agent: {alive}"
        return code

    def status(self) -> dict[str, Any]:
        return _status(self.status_port)

    def appended(self, at_least: int, what: str) -> None:
        """Wait until the agent acknowledged ``at_least`` readings into its ingest log."""
        wait_for(lambda: self.status()["metrics"].get("mqtt_appended", 0) >= at_least, 30, what)

    def agent_id(self) -> str:
        """The id the agent goes by: ``--id``, or the one it keeps in its workdir."""
        if self.with_id:
            return AGENT
        return (self.daemons.tmp / AGENT / "node-id").read_text().strip()

    def start_worker(self) -> psutil.Process:
        self.worker = self.daemons.start_worker(
            "w1", env={"IOT_OUT": str(self.out)}, with_id=self.worker_id
        )
        return self.worker

    def agents(self) -> list[dict[str, Any]]:
        return [n for n in self.daemons.api("/api/v1/nodes") if n["kind"] == "agent"]

    def node(self) -> dict[str, Any] | None:
        return next((n for n in self.agents() if n["id"] == self.agent_id()), None)

    def windows(self) -> dict[str, list[Any]]:
        return _site_rows(self.out / "site_windows")


def start_site(
    daemons: Daemons,
    mosquitto: tuple[str, int],
    tmp_path: Path,
    *,
    master: str | None = None,
    with_id: bool = True,
    worker_id: bool = True,
    footprint: str = "normal",
) -> Site:
    """Master (already started if ``master`` is given: the agent's route to the cloud, a
    LinkProxy it reaches the master and the workers' ingress through), worker w1, agent
    gw-site0 with a status port (and ``--footprint``); the example submitted and the agent's
    uplink open."""
    route: list[str] = []
    if master is None:
        daemons.start_master()
        master = daemons.grpc
    else:
        route = ["--ingress-proxy", master]
    out = tmp_path / "out"
    worker = daemons.start_worker("w1", env={"IOT_OUT": str(out)}, with_id=worker_id)
    host, port = mosquitto
    status_port = free_port()
    args = [
        "--master",
        master,
        "--label",
        "site=site0",
        "--mqtt",
        f"{host}:{port}",
        "--topic",
        "sensors/site0/#",
        "--status-port",
        str(status_port),
        *route,
        *(["--footprint", footprint] if footprint != "normal" else []),
    ]
    site = Site(daemons, out, args, status_port, with_id, worker, worker_id)
    site.start_agent()
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        60,  # a loaded CI machine took over 30 s once (the daemons' logs show on a failure)
        "the worker and the agent online",
    )
    daemons.cli("submit", str(PIPELINE))
    wait_for(
        lambda: (
            (n := site.node()) is not None
            and n["metrics"].get("mqtt_connected") == 1.0
            and n["uplinks"].get("iot", {}).get("connected")
        ),
        60,
        "the agent subscribed and its uplink open",
    )
    return site


def expected(rows: list[tuple[str, dict[str, Any]]]) -> dict[str, list[Any]]:
    """The closed windows the cloud must write for ``rows`` (each reading counted once)."""
    return _expected([r for _, r in rows])


def lost_and_duplicated(want: dict[str, list[Any]], got: dict[str, list[Any]]) -> tuple[int, int]:
    """Readings missing from and counted twice in the cloud's closed windows (count: index 4)."""
    lost = dup = 0
    for key, row in want.items():
        have = got.get(key, [0] * len(row))[4]
        lost += max(0, row[4] - have)
        dup += max(0, have - row[4])
    dup += sum(row[4] for key, row in got.items() if key not in want)
    return lost, dup


def master_log(daemons: Daemons) -> str:
    return (daemons.tmp / "master.log").read_text(errors="replace")
