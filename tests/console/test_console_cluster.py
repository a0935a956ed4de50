"""Issue 36: the cluster run from the web console, in a real headless Chromium.

A master and a worker. As an admin, through the page alone: submit a package of two .py
files (``flaky.py`` and the ``_kit.py`` it imports, zipped by the page; the topology file
picked from their names) and see it run, a second submit refused with the master's
reason, and a .zip (the editable example, compressed) sent as it is, its topology file
picked from the names in its central directory; the topology's exception history per
component (its spout raises once in ``next_tuple``, its relay once in its constructor),
newest first, the traceback folded; deactivate (asks; confirmed) and activate, checked
through the API; tokens created (a viewer's, an operator's), their secret shown once, one
revoked (asks). A viewer's pages have no control it cannot use (counted on every page),
and the same requests forged with its token are each a 403; an operator's have activate
and deactivate but no submit, kill, node or token control. Last, as the admin again:
forget refused for an online node (the reason shown), kill (asks; cancelled, then
confirmed: gone), the node revoked (goes offline) and forgotten (gone).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import Select

from headwater.common._package import build_package

from ..integration._daemons import Daemons
from ..integration._support import EXAMPLES, TOPOLOGIES, wait_for
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

CONTROLS = (
    "#submit-panel, #submit-files, #topology-controls, #topology-activate, "
    "#topology-deactivate, #topology-kill, td.actions, button.asks, #token-form, "
    "#token-create, #edit-panel, button.rollback, #move-panel"
)
"""Every control that changes the cluster: a viewer's page has none of them."""


def _status(daemons: Daemons, token: str, method: str, path: str, body: Any = None) -> int:
    """The status the master answers ``method path`` with ``token`` (a forged request)."""
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if isinstance(body, bytes):
        data, headers["Content-Type"] = body, "application/zip"
    elif body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    req = urllib.request.Request(daemons.http + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _state(daemons: Daemons) -> str | None:
    """flaky's state; None once it is gone."""
    every = daemons.api("/api/v1/topologies")
    return next((t["state"] for t in every if t["name"] == "flaky"), None)


def _token(page: Page, role: str, description: str) -> str:
    """Create a token on the tokens page; its secret as the page shows it (once)."""
    Select(page.find("#token-role")).select_by_value(role)
    page.find("#token-ttl").clear()
    page.find("#token-ttl").send_keys("1h")
    page.find("#token-description").send_keys(description)
    page.click("#token-create")
    page.wait_text("#token-result", f"({role})")
    secret = str(page.js("return document.querySelector('#token-secret').value;"))
    page.wait_text("#token-table", description)
    assert secret.partition(".")[0] in page.text("#token-table")
    assert secret not in page.text("#token-table")  # the list never shows a secret
    return secret


def _relogin(page: Page, token: str) -> None:
    page.click("#logout")
    page.find("#token")
    page.login(token)


def test_the_cluster_is_run_from_the_page(
    daemons: Daemons, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    env = {"HW_TEST_OUT": str(out), "HW_TEST_RAISE_IN_INIT": "1", "HW_TEST_SPOUT_RAISE_AT": "7"}
    env["EDITABLE_OUT"] = str(tmp_path / "editable-out")
    daemons.start_master()
    daemons.start_worker("w1", {**env, "HW_TEST_RATE": "20"})
    wait_for(lambda: [n["online"] for n in daemons.api("/api/v1/nodes")] == [True], 30, "w1")
    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(daemons.token)

    # submit: two .py files, zipped by the page, the topology file picked from their names
    page.find("#submit-files").send_keys(f"{TOPOLOGIES / 'flaky.py'}\n{TOPOLOGIES / '_kit.py'}")
    page.wait_text("#submit-result", "2 files")
    options = page.js(
        "return [...document.querySelectorAll('#submit-entry option')].map(o => o.value);"
    )
    assert options == ["flaky.py", "_kit.py"]
    assert page.js("return document.querySelector('#submit-entry').value;") == "flaky.py"
    page.click("#submit-button")
    assert "flaky" in page.wait_text("#submit-result", "submitted: flaky", 60)
    wait_for(lambda: _state(daemons) == "RUNNING", 30, "flaky running")
    page.wait_text('tr[data-topology="flaky"] .state', "RUNNING")
    page.shot("cluster")
    page.click("#submit-button")  # again: the master refuses, and the page says why
    page.wait_text("#submit-result", "refused: topology 'flaky' is already running", 60)
    # a .zip goes as it is (compressed: its names read from its central directory)
    package, entry = build_package(EXAMPLES / "editable" / "topology.py")
    (tmp_path / "editable.zip").write_bytes(package)
    page.js("document.querySelector('#submit-files').value = '';")
    page.find("#submit-files").send_keys(str(tmp_path / "editable.zip"))
    page.wait_text("#submit-result", "3 files")
    assert page.js("return document.querySelector('#submit-entry').value;") == entry
    page.click("#submit-button")
    page.wait_text("#submit-result", "submitted: editable", 60)
    page.wait_text('tr[data-topology="editable"] .state', "RUNNING")

    # the exception history, per component, newest first, tracebacks folded
    page.go("#/topology/flaky")
    relay = '#exceptions .exc-component[data-component="relay"]'
    page.wait_text(f"{relay} .exc-message", "relay cannot start", 60)
    page.wait_text('#exceptions .exc-component[data-component="seq"] .exc-message', "seq cannot")
    assert "RuntimeError" in page.text(f"{relay} .exception pre")
    assert not page.js(f"return document.querySelector('{relay} .exception').open;")
    assert page.count("#exceptions .exc-component") == 2
    # a group shown alone is drawn open, and stays open when a second one joins it
    if not page.js(f"return document.querySelector('{relay}').open;"):
        page.click(f"{relay} > summary")
    page.click(f"{relay} .exception > summary")
    opened = f"return document.querySelector('{relay} .exception').open;"
    wait_for(lambda: page.js(opened), 10, "the traceback unfolded")  # kept on redraw
    page.shot("exceptions", at="#exceptions")

    # deactivate asks; confirmed, the topology pauses; activate runs it again
    assert page.js("return document.querySelector('#topology-activate').disabled;")
    page.click("#topology-deactivate")
    assert "Deactivate flaky?" in page.text("#topology-deactivate-ask")
    page.click("#topology-deactivate-confirm")
    wait_for(lambda: _state(daemons) == "PAUSED", 20, "flaky deactivated")
    page.wait_text(".head .state", "PAUSED")
    page.click("#topology-activate")
    wait_for(lambda: _state(daemons) == "RUNNING", 20, "flaky activated")
    page.wait_text(".head .state", "RUNNING")

    # tokens: created with their secret shown once; one revoked (asks)
    page.go("#/tokens")
    viewer = _token(page, "viewer", "a viewer from the page")
    operator = _token(page, "operator", "an operator from the page")
    spare = _token(page, "viewer", "a token to revoke")
    page.shot("tokens")
    spare_id = spare.partition(".")[0]
    page.click(f"#revoke-token-{spare_id}")
    page.click(f"#revoke-token-{spare_id}-confirm")
    wait_for(lambda: page.count(f'tr[data-token="{spare_id}"]') == 0, 20, "the row to go")
    assert _status(daemons, spare, "GET", "/api/v1/topologies") == 401

    # a viewer: no control on any page, and every forged request is a 403
    _relogin(page, viewer)
    assert page.js("return document.querySelector('#nav-tokens').hidden;")
    for route, ready in (
        ("#/topologies", 'tr[data-topology="flaky"]'),
        ("#/topology/flaky", f"{relay} .exc-message"),
        ("#/nodes", 'tr[data-node="w1"]'),
        ("#/revisions/flaky", "#revision-table"),
    ):
        page.go(route)
        page.find(ready)
        assert page.count(CONTROLS) == 0, route
    page.go("#/tokens")
    page.wait_text("main", "Only an admin manages tokens")
    assert page.count(CONTROLS) == 0
    package, entry = build_package(TOPOLOGIES / "flaky.py")
    assert entry == "flaky.py"
    forged = [
        ("POST", f"/api/v1/topologies?entry={entry}", package),
        ("DELETE", "/api/v1/topologies/flaky", None),
        ("POST", "/api/v1/topologies/flaky/activate", None),
        ("POST", "/api/v1/topologies/flaky/deactivate", None),
        ("DELETE", "/api/v1/nodes/w1", None),
        ("POST", "/api/v1/nodes/w1/revoke", None),
        ("POST", "/api/v1/tokens", {"role": "admin"}),
        ("GET", "/api/v1/tokens", None),
    ]
    assert [_status(daemons, viewer, m, p, b) for m, p, b in forged] == [403] * len(forged)
    assert _state(daemons) == "RUNNING"

    # an operator: activate and deactivate, nothing an admin's
    _relogin(page, operator)
    page.go("#/topology/flaky")
    page.find("#topology-deactivate")
    assert page.count("#topology-activate") == 1
    assert page.count("#topology-kill") == 0
    page.go("#/topologies")
    page.find('tr[data-topology="flaky"]')
    assert page.count("#submit-panel") == 0
    page.go("#/nodes")
    page.find('tr[data-node="w1"]')
    assert page.count("td.actions") == 0
    assert page.js("return document.querySelector('#nav-tokens').hidden;")
    assert [_status(daemons, operator, m, p, b) for m, p, b in forged[:2]] == [403, 403]

    # the admin again: forget refused while online; kill (cancelled, then confirmed)
    _relogin(page, daemons.token)
    page.find('tr[data-node="w1"] td.actions')
    page.click("#forget-w1")
    page.click("#forget-w1-confirm")
    page.wait_text("#forget-w1-result", "refused: ")
    page.go("#/topology/flaky")
    page.click("#topology-kill")
    assert "Kill flaky?" in page.text("#topology-kill-ask")
    page.click("#topology-kill-cancel")
    assert page.js("return document.querySelector('#topology-kill-ask').hidden;")
    assert _state(daemons) == "RUNNING"
    page.click("#topology-kill")
    page.click("#topology-kill-confirm")
    wait_for(lambda: _state(daemons) is None, 30, "flaky killed")
    wait_for(lambda: page.js("return location.hash;") == "#/topologies", 10, "the list again")

    # the node revoked (it goes offline), then forgotten (it goes: it holds no container)
    daemons.cli("kill", "editable")
    page.go("#/nodes")
    page.click("#revoke-w1")
    page.wait_text("#revoke-w1-ask", "its id are refused from now on, for good")  # no re-enrol
    page.click("#revoke-w1-confirm")
    page.wait_text('tr[data-node="w1"] .online-state', "offline", 30)
    page.click("#forget-w1")
    page.click("#forget-w1-confirm")
    wait_for(lambda: page.count('tr[data-node="w1"]') == 0, 20, "w1 forgotten")
    assert daemons.api("/api/v1/nodes") == []
