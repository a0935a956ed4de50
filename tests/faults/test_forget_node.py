"""A node that is gone can be forgotten (``headwater nodes --forget ID``); one that is online
or holds containers cannot, and an unknown id is a 404 with a message. An agent that resumes
from its own disk a topology killed while it was away is told to stop it when it attaches.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ._report import record
from ._site import AGENT, master_log, start_site

pytestmark = pytest.mark.cluster


def _forget(daemons: Daemons, node: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "headwater", "nodes", "--forget", node),
            *("--master", daemons.http, "--token", daemons.token),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _ids(daemons: Daemons) -> list[str]:
    return [n["id"] for n in daemons.api("/api/v1/nodes")]


def _deployment_agents(daemons: Daemons) -> list[str]:
    deps = json.loads((daemons.tmp / "master" / "deployments.json").read_text())
    return [a for d in deps for a in d["agents"]]


def test_forget_an_offline_node_and_refuse_the_rest(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    site = start_site(daemons, mosquitto, tmp_path)

    online = _forget(daemons, AGENT)
    assert online.returncode == 2 and "is online" in online.stderr, online
    unknown = _forget(daemons, "no-such-node")
    assert unknown.returncode == 2, unknown
    assert "no node 'no-such-node' (known: gw-site0, w1)" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    req = urllib.request.Request(
        f"{daemons.http}/api/v1/nodes/no%2Fsuch", method="DELETE", headers=daemons.auth
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 404
    assert json.loads(err.value.read())["error"].startswith("no node 'no/such'")

    site.worker.terminate()  # offline, but the topology's cloud container is assigned to it
    site.worker.wait(30)
    wait_for(
        lambda: not next(n for n in daemons.api("/api/v1/nodes") if n["id"] == "w1")["online"],
        20,
        "the worker offline",
    )
    held = _forget(daemons, "w1")
    assert held.returncode == 2 and "holds containers iot/0" in held.stderr, held

    assert site.agent is not None
    site.agent.terminate()
    assert site.agent.wait(30) == 0
    stopped_at = time.monotonic()
    wait_for(lambda: not (n := site.node()) or not n["online"], 20, "the agent offline")
    forgotten = _forget(daemons, AGENT)
    assert forgotten.returncode == 0 and f"forgot node '{AGENT}'" in forgotten.stdout
    assert _ids(daemons) == ["w1"]
    assert _deployment_agents(daemons) == []  # a restarted master does not bring it back
    forget_s = time.monotonic() - stopped_at

    # it comes back: a node like any other, given its edge subgraph again
    site.start_agent()
    back_at = time.monotonic()
    wait_for(
        lambda: (n := site.node()) is not None and n["online"] and n["containers"] == ["iot/0"],
        30,
        "the agent back, running iot",
    )
    assert _deployment_agents(daemons) == [AGENT]
    recover_s = time.monotonic() - back_at

    # killed while the agent is away: the agent resumes it from its disk, the master stops it
    site.agent.terminate()
    assert site.agent.wait(30) == 0
    daemons.cli("kill", "iot")
    site.start_agent()
    wait_for(
        lambda: (
            (n := site.node()) is not None
            and n["online"]
            and site.status().get("containers") == []
            and site.status().get("topologies") == {}
        ),
        30,
        "the master's stop order for the killed topology",
    )
    agent_log = (daemons.tmp / f"{AGENT}.log").read_text()
    assert agent_log.count("resuming the edge subgraph of 'iot' from this agent's disk") == 2
    assert "agent gw-site0 runs iot/0, which the master does not give it" in master_log(daemons)
    orders = json.loads((daemons.tmp / AGENT / "orders.json").read_text())
    assert orders["runs"] == [] and orders["states"] == {}
    assert not (daemons.tmp / AGENT / "iot").exists()
    record(
        "node gone: forgotten (headwater nodes --forget), back as a new attach",
        detect_s=round(forget_s, 2),
        recover_s=round(recover_s, 2),
        readings=0,
        lost=0,
        duplicated=0,
    )
