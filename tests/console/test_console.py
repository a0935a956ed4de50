"""Issue 18: the web console in a real headless Chromium against a real cluster.

A master, a worker and two agents (site0, site1) with Mosquitto run the
edge-to-cloud topology of the live-edit tests (``readings`` -> ``count`` on each
agent, ``sink`` in the cloud). Through the page alone: log in; the DAG shows
every component on its side (the edge ones once per agent) with rates that
move; an attach, a replace, a rollback and a remove made with the page's
controls are applied (checked through the API and the output); an edit made against a
revision someone else moved on is refused and the page says so and reloads; an
uplink cut shows down with its backlog growing (and the agent's own page,
on its status port, shows its subgraph still counting), and an agent stopped
turns offline, on the page; a viewer's page has no edit control;
a revoked token sends the page back to the login form with the reason. The
run saves a screenshot of each view into docs/console/.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import Select

from headwater._demo.linkproxy import LinkProxy

from .._ports import free_port
from ..integration import _editable_edge
from ..integration._daemons import Daemons
from ..integration._support import committed_rows, wait_for
from ..integration.test_edge_cloud import SITES, Sensors, SteadySensors, _agent_args
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]


def _send(daemons: Daemons, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {**daemons.auth, "Content-Type": "application/json"}
    req = urllib.request.Request(daemons.http + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def _revisions(daemons: Daemons) -> dict[str, Any]:
    return daemons.api("/api/v1/topologies/edgeedit/revisions")  # type: ignore[no-any-return]


def _applied(daemons: Daemons, revision: int) -> dict[str, Any] | None:
    r = _revisions(daemons)
    rec = next((x for x in r["revisions"] if x["revision"] == revision), None)
    return rec if r["current"] == revision and rec and rec["status"] == "applied" else None


def _edit_with_the_page(page: Page, action: str, file: Path | None, components: list[str]) -> None:
    Select(page.find("#edit-action")).select_by_value(action)
    if file is not None:
        page.find("#edit-file").send_keys(str(file))
    for name in components:
        box = page.find(f'#edit-components input[data-component="{name}"]')
        if not box.is_selected():
            box.click()
    page.find("#edit-apply").click()


def test_the_console_shows_the_cluster_live_and_edits_it(
    daemons: Daemons, mosquitto: tuple[str, int], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    out, code = tmp_path / "out", tmp_path / "code"
    daemons.start_master()
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
    proxy = LinkProxy(daemons.grpc)  # site1's uplink to the worker goes through it
    route = {"site0": [], "site1": ["--ingress-proxy", proxy.address]}
    status = {site: free_port() for site in SITES}  # each agent's own page
    agents = {
        site: daemons.start_agent(
            f"gw-{site}",
            *_agent_args(
                mosquitto, site, daemons.grpc, "--status-port", str(status[site]), *route[site]
            ),
        )
        for site in SITES
    }
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 3,
        30,
        "the worker and both agents online",
    )
    daemons.cli("submit", str(_editable_edge.write(code / "r1", 1)))
    sensors = Sensors(*mosquitto)
    messages = [
        (f"sensors/{site}/s{i % 3}", json.dumps({"seq": i}).encode())
        for i in range(30_000)
        for site in SITES
    ]
    publisher = SteadySensors(sensors, messages, 60)
    publisher.start()
    try:
        page = Page(browser, daemons.http, SCREENSHOTS)
        _scenario(page, daemons, out, code, agents, proxy, status["site1"])
    finally:
        proxy.close()
        publisher.stop.set()
        publisher.join(10)
        sensors.close()


def _scenario(
    page: Page,
    daemons: Daemons,
    out: Path,
    code: Path,
    agents: dict[str, Any],
    proxy: LinkProxy,
    site1_status: int,
) -> None:
    # -- log in ---------------------------------------------------------------------------
    page.open()
    page.find("#login-form")
    page.shot("login")
    page.login(daemons.token)
    assert page.text("#who").startswith("admin")

    # -- the topologies table ---------------------------------------------------------------
    page.go("#/topologies")
    page.wait_text('tr[data-topology="edgeedit"]', "RUNNING")
    wait_for(lambda: committed_rows(out / "counts"), 60, "the first rows in the cloud")
    wait_for(
        lambda: (
            page.text('tr[data-topology="edgeedit"] .rate').endswith("/s")
            and page.text('tr[data-topology="edgeedit"] .rate') != "0.0/s"
        ),
        30,
        "a rate in the topologies table",
    )
    page.shot("topologies")

    # -- the DAG: every component on its side, the edge ones per agent, rates that move -------
    page.go("#/topology/edgeedit")
    page.find('g.component[data-component="sink"][data-side="cloud"]')
    for site in SITES:
        for name in ("readings", "count"):
            page.find(f'g.component[data-component="{name}"][data-agent="gw-{site}"]')
    assert page.count('g.component[data-side="edge"]') == 4
    assert page.count('g.component[data-side="cloud"]') == 1
    assert page.count("path.edge.uplink") == 2  # count -> sink from each agent
    wait_for(lambda: page.rates("count", "gw-site0")[1] > 0, 30, "count's rate out on site0")
    wait_for(lambda: page.rates("readings", "gw-site1")[1] > 0, 30, "readings' rate on site1")
    wait_for(lambda: page.rates("sink")[0] > 0, 30, "the sink's rate in")
    page.click('g.component[data-component="sink"]')  # again if the DAG redrew it
    first = int(page.find("#instances tbody tr td:nth-child(3)").text)
    wait_for(
        lambda: int(page.text("#instances tbody tr td:nth-child(3)") or 0) > first,
        30,
        "the sink's executed count to move",
    )
    page.find("#edit-panel")
    page.wait_text("#edit-base", "1")
    page.shot("topology")

    # -- attach a tap in the cloud with the page's own controls -------------------------------
    _edit_with_the_page(page, "attach", _editable_edge.write(code / "r2", 1, taps=[1]), [])
    page.wait_text("#edit-result", "revision 2 applied", 120)
    assert _applied(daemons, 2)["action"] == "attach"  # type: ignore[index]
    wait_for(lambda: committed_rows(out / "tap_1"), 60, "rows through the attached tap")
    page.find('g.component[data-component="tap_1_sink"][data-side="cloud"]')

    # -- replace the edge counter: version 2 -------------------------------------------------
    page.wait_text("#edit-base", "2")
    page.js("document.getElementById('edit-file').value = '';")
    _edit_with_the_page(page, "replace", _editable_edge.write(code / "r3", 2, taps=[1]), ["count"])
    page.wait_text("#edit-result", "revision 3 applied", 120)
    assert _applied(daemons, 3)["diff"]["replaced"] == ["count"]  # type: ignore[index]
    wait_for(
        lambda: any(r[3] == 2 for r in committed_rows(out / "counts")),
        60,
        "rows counted by version 2",
    )

    # -- someone else edits meanwhile: the page's stale edit is refused, then reloads ----------
    page.wait_text("#edit-base", "3")
    daemons.cli("remove", "edgeedit", "tap_1", "tap_1_sink", "--base", "3")
    page.wait_text("#edit-moved", "revision 4")
    page.js("document.getElementById('edit-file').value = '';")
    _edit_with_the_page(page, "replace", _editable_edge.write(code / "r5", 3), ["count"])
    page.wait_text("#edit-result .conflict", "changed by someone else — reload")
    assert _revisions(daemons)["current"] == 4  # nothing changed
    page.shot("conflict", at="#edit-result")
    page.find("#edit-reload").click()
    page.wait_text("#edit-base", "4")
    assert page.text("#edit-moved") == ""

    # -- roll back to revision 2 from the revisions view, confirming -------------------------------
    page.go("#/revisions/edgeedit")
    page.find('button.rollback[data-revision="2"]').click()
    page.wait_text("#rollback-2-ask", "Roll back to revision 2?")  # it asks first
    page.wait_text("#rollback-2-diff", "tap_1")  # with what the rollback changes
    assert _revisions(daemons)["current"] == 4
    page.click("#rollback-2-confirm")
    page.wait_text("#edit-result", "revision 5 applied", 120)
    last = _applied(daemons, 5)
    assert last is not None and last["action"] == "rollback"
    revisions = _revisions(daemons)["revisions"]
    assert last["hash"] == revisions[1]["hash"]  # revision 2's code runs again
    page.wait_text('tr[data-revision="5"] .status', "applied")
    page.shot("revisions")
    v2_max = max(r[1] for r in committed_rows(out / "counts") if r[3] == 2)
    wait_for(
        lambda: any(r[3] == 1 and r[1] > v2_max for r in committed_rows(out / "counts")),
        60,
        "rows counted by version 1 again after the rollback",
    )
    wait_for(lambda: len(committed_rows(out / "tap_1")) > 0, 30, "the tap back")

    # -- remove the tap again with the page's controls ------------------------------------------
    page.go("#/topology/edgeedit")
    page.wait_text("#edit-base", "5")
    _edit_with_the_page(page, "remove", None, ["tap_1", "tap_1_sink"])
    page.wait_text("#edit-result", "revision 6 applied", 120)
    assert _applied(daemons, 6)["diff"]["removed"] == ["tap_1", "tap_1_sink"]  # type: ignore[index]
    wait_for(lambda: page.count('g.component[data-component="tap_1"]') == 0, 15, "tap_1 gone")

    # -- the sink on two instances: the running code, only its parallelism changed -----------
    page.go("#/topology/edgeedit")
    page.wait_text("#edit-base", "6")
    page.find("#edit-parallelism").send_keys("2")
    _edit_with_the_page(page, "replace", None, ["sink"])
    page.wait_text("#edit-result", "revision 7 applied", 120)
    assert _applied(daemons, 7)["diff"]["replaced"] == ["sink"]  # type: ignore[index]
    plan = daemons.api("/api/v1/topologies/edgeedit/plan")
    assert [i["component"] for i in plan["instances"]].count("sink") == 2
    page.wait_text(
        'g.component[data-component="sink"]', "\u00d72"
    )  # the box says "sink  (times) 2"

    # -- the other views ---------------------------------------------------------------------
    page.go("#/checkpoints/edgeedit")
    page.wait_text("#checkpoint-table tbody", "COMPLETE")
    for agent in ("gw-site0", "gw-site1"):  # each agent's edge domain, as it reports it
        page.wait_text("#edge-checkpoint-table tbody", agent)
    page.shot("checkpoints")
    page.go("#/models")
    page.wait_text("#no-models", "No model")  # (test_models_console.py shows one)

    # -- site1's uplink cut: its uplink shows down and its backlog grows on the page -----------
    page.go("#/nodes")
    page.wait_text('tr[data-node="gw-site1"] .online-state', "online")
    proxy.cut()
    page.wait_text('tr[data-node="gw-site1"] .uplink', "edgeedit: down", 30)
    cut_at = _batches(page.text('tr[data-node="gw-site1"] .backlog'))
    wait_for(
        lambda: _batches(page.text('tr[data-node="gw-site1"] .backlog')) > cut_at + 3,
        60,
        "site1's backlog to grow on the page",
    )
    assert page.text('tr[data-node="gw-site1"] .online-state') == "online"
    page.go("#/topology/edgeedit")
    page.find('g.band[data-lane="gw-site1"]')
    wait_for(lambda: page.count("path.edge.uplink-down") == 1, 15, "site1's uplink drawn down")
    page.wait_text('g.band[data-lane="gw-site1"]', "uplink down")
    wait_for(lambda: page.rates("count", "gw-site0")[1] > 0, 30, "rates on the new page")
    page.shot("topology-uplink-cut")

    # -- site1's own page (its status port) shows its edge subgraph, still cut off ------------
    own = Page(page.driver, f"http://127.0.0.1:{site1_status}", SCREENSHOTS)
    own.open()
    own.wait_text("#who", "viewer (this server asks no token)")
    own.go("#/topology/edgeedit")
    own.wait_text('g.band[data-lane="gw-site1"]', "uplink down")
    for name in ("readings", "count"):
        own.find(f'g.component[data-component="{name}"][data-agent="gw-site1"]')
    assert own.count('g.component[data-side="cloud"], g.band-cloud') == 0
    wait_for(lambda: own.rates("count", "gw-site1")[1] > 0, 30, "site1 counting while cut off")
    assert own.count("#edit-panel, #login:not([hidden]), button.rollback") == 0
    own.shot("agent")
    proxy.restore()
    page.open()  # back to the master's page: the tab kept its token
    page.wait_text("#who", "admin")

    # -- an agent stopped turns offline on the page --------------------------------------------
    page.go("#/nodes")
    agents["site1"].terminate()
    agents["site1"].wait(30)
    page.wait_text('tr[data-node="gw-site1"] .online-state', "offline", 30)
    assert page.text('tr[data-node="gw-site0"] .online-state') == "online"
    page.shot("nodes")
    page.go("#/topology/edgeedit")
    page.wait_text('g.band[data-lane="gw-site1"] .band-state', "offline")

    # -- a viewer's page has no edit control; a revoked token logs out with the reason --------
    viewer = _send(daemons, "POST", "/api/v1/tokens", {"role": "viewer"})
    page.find("#logout").click()
    page.wait_text("#login-reason", "logged out")
    page.login(viewer["token"])
    assert page.text("#who").startswith("viewer")
    page.go("#/topology/edgeedit")
    page.find('g.component[data-component="sink"]')
    assert page.count("#edit-panel, #edit-apply, #edit-action, #edit-file") == 0
    page.go("#/revisions/edgeedit")
    page.find('tr[data-revision="2"]')
    assert page.count("button.rollback") == 0
    assert page.count("main button, main input, main select, main textarea") == 0
    assert "null" not in page.text("main")
    _send(daemons, "DELETE", f"/api/v1/tokens/{viewer['id']}")
    page.wait_text("#login-reason", "unknown or revoked token", 15)
    assert not page.find("#login").get_attribute("hidden")


def _batches(text: str) -> int:
    """The batches of a backlog cell: '289 B (1 batches)' -> 1."""
    found = re.search(r"\((\d+) batches\)", text)
    assert found, text
    return int(found.group(1))
