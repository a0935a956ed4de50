"""Issue 37: moving components between edge and cloud from the web console, in a real
headless Chromium, at 1,280 px, as an operator.

On a master alone (the topology of ``tests/cloud/test_moves.py``, nothing applied): each
component is listed where it runs; a move with nothing picked, a spout, a keyed component
without a key -> site relation and a typed ``edge(LABEL=VALUE)`` its inputs do not run at are
each refused in the form with the master's reason; a move that checks out but whose switch is
not built (a keyed component moved with another) is previewed with the master's "not built
yet" and no Apply, and the master's 501 to such a move applied (its preview's answer doctored
to offer Apply) shown as the master says it. Components are
ticked with Space, Preview, Apply and its question answered with Enter (the focus goes to
Apply, then to "Yes, move").

On a real cluster (master, worker, one agent, Mosquitto: the smallest that runs an edge
subgraph; the topology of ``tests/integration/test_moves.py``): ``tag`` (stateless) is
previewed and moved to the agent from the page (Apply asks first), the placement checked
through the REST API and readings tagged on the agent after the switch; a move previewed
against revision 2 and applied after someone else moved ``tag`` back is refused as stale
(409, reload); a viewer's page has no move form, and a move forged with its token is a 403.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from ..cloud.test_moves import _package
from ..integration._daemons import Daemons
from ..integration._support import committed_rows, wait_for
from ..integration.test_edge_cloud import Sensors, _agent_args
from ..integration.test_moves import SOURCE
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]


# the page's fetch, with a move preview's not_built dropped from the master's answer
WITHOUT_NOT_BUILT = """
const real = window.fetch;
window.fetch = async (url, opts) => {
  const res = await real(url, opts);
  if (!String(url).includes('/move?') || !String(url).includes('dry_run=1')) return res;
  const data = await res.json();
  delete data.not_built;
  return new Response(JSON.stringify(data), {status: res.status, headers: res.headers});
};
"""


def _post(daemons: Daemons, path: str, body: Any = None, token: str = "") -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token or daemons.token}"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(daemons.http + path, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _operator(daemons: Daemons, browser: webdriver.Chrome, topology: str) -> Page:
    """The topology's page at 1,280 px, logged in with a new operator token."""
    status, made = _post(daemons, "/api/v1/tokens", {"role": "operator"})
    assert status == 201, made
    browser.set_window_size(1280, 800)
    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(made["token"])
    assert page.text("#who").startswith("operator")
    page.go(f"#/topology/{topology}")
    page.find("#move-panel")
    return page


def _where(page: Page) -> dict[str, str]:
    """Each component as the move form lists it, with where it runs now."""
    return dict(
        page.js(
            "return [...document.querySelectorAll('#move-components label.pick')]"
            ".map(l => [l.dataset.component, l.querySelector('.where').dataset.where]);"
        )
    )


def _pick(page: Page, *names: str) -> None:
    """Tick exactly ``names`` in the move form, by keyboard (Space on each box)."""
    for box in page.driver.find_elements("css selector", "#move-components input"):
        if box.is_selected() != (box.get_attribute("value") in names):
            box.send_keys(Keys.SPACE)


def _preview(page: Page, to: str, labels: str = "") -> None:
    Select(page.find("#move-to")).select_by_value(to)
    if labels:
        page.find("#move-selector").clear()
        page.find("#move-selector").send_keys(labels)
    page.find("#move-preview").send_keys(Keys.ENTER)


def _fits(page: Page) -> None:
    width, inner = page.js("return [document.documentElement.scrollWidth, window.innerWidth];")
    assert width <= inner, f"the page scrolls sideways at 1,280 px: {width} > {inner}"


def test_moves_are_previewed_and_refused_with_the_masters_reason(
    daemons: Daemons, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    daemons.start_master()
    req = urllib.request.Request(
        f"{daemons.http}/api/v1/topologies?entry=topo.py",
        data=_package(tmp_path),
        headers={**daemons.auth, "Content-Type": "application/zip"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 201
    page = _operator(daemons, browser, "mv")
    wait_for(lambda: _where(page).get("windows") == "cloud", 30, "the components listed")
    assert _where(page) == {
        "readings": "edge",
        "parse": "edge",
        "tag": "edge",
        "windows": "cloud",
        "odd": "cloud",
        "counts": "cloud",
        "total": "cloud",
        "relay": "cloud",
        "land": "cloud",
    }
    page.wait_text("#move-base", "1")

    _preview(page, "edge")  # nothing picked: the page says what to do, nothing is sent
    page.wait_text("#move-result .error", "pick the components to move")
    for picked, to, labels, says in (
        ("readings", "cloud", "", "refused: 'readings' is a spout"),
        ("counts", "edge", "", "declares no key -> site relation"),
        # typed: sent as edge(site=a)
        ("windows", "labelled", "site=a", "not available at edge(site=a) as one subgraph"),
    ):
        _pick(page, picked)
        _preview(page, to, labels)
        page.wait_text("#move-result .error", says)
        assert page.count("#move-plan *") == 0  # no plan, no Apply

    # a move that checks out but whose switch is not built (a keyed component moved with
    # another): previewed, with the master's "not built yet", no Apply
    _pick(page, "windows", "relay")
    _preview(page, "edge")
    page.wait_text("#move-plan h3", "Preview: move windows, relay to edge, against revision 1")
    assert "windows cloud → edge" in page.text("#move-plan .diff .moved")
    assert "the cloud workers, the edge agents" in page.text("#move-plan .diff .domains")
    assert "total" in page.text("#move-plan .diff .unchanged")
    assert page.text("#move-not-built").startswith(
        "not built yet: the move of 'windows' checks out, but moving a keyed component"
    )
    assert page.count("#move-apply") == 0
    _fits(page)
    page.shot("move-not-built", at="#move-panel")
    # the master's own 501, as the page shows it when a move gets that far: here a preview
    # whose answer lost its not_built on the way, so that Apply is offered and sent
    page.js(WITHOUT_NOT_BUILT)
    _preview(page, "edge")
    page.click("#move-apply")
    page.click("#move-apply-confirm")
    page.wait_text(
        "#move-result .not-built",
        "not built yet: the move of 'windows' checks out, but moving a keyed component",
    )
    assert [r["revision"] for r in daemons.api("/api/v1/topologies/mv/revisions")["revisions"]] == [
        1
    ]


def _on_edge(daemons: Daemons) -> set[str]:
    return {c["name"] for c in daemons.api("/api/v1/topologies/mover")["edge"]["components"]}


def _applied(daemons: Daemons, revision: int) -> bool:
    r = daemons.api("/api/v1/topologies/mover/revisions")
    rec = next((x for x in r["revisions"] if x["revision"] == revision), None)
    return bool(r["current"] == revision and rec and rec["status"] == "applied")


def _tagged(out: Path, where: str) -> int:
    return sum(1 for r in committed_rows(out / "tagged") if r[2] == where)


def test_a_stateless_component_is_moved_from_the_page(
    daemons: Daemons, mosquitto: tuple[str, int], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    out, code = tmp_path / "out", tmp_path / "code"
    daemons.start_master()
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
    daemons.start_agent("gw-site0", *_agent_args(mosquitto, "site0", daemons.grpc))
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "the worker and the agent online",
    )
    code.mkdir()
    (code / "mover.py").write_text(SOURCE)
    daemons.cli("submit", str(code / "mover.py"))
    sensors = Sensors(*mosquitto)
    seq = iter(range(1_000_000))

    def publish(n: int) -> None:
        numbers = [next(seq) for _ in range(n)]
        sensors.publish(
            [(f"sensors/site0/s{i % 3}", json.dumps({"seq": i}).encode()) for i in numbers]
        )

    try:
        publish(20)
        wait_for(lambda: _tagged(out, "cloud") >= 20, 60, "readings tagged in the cloud")
        page = _operator(daemons, browser, "mover")
        wait_for(
            lambda: _where(page) == {"readings": "edge", "tag": "cloud", "sink": "cloud"},
            30,
            "the form",
        )

        _pick(page, "readings")  # a spout: refused, with the master's reason
        _preview(page, "cloud")
        page.wait_text("#move-result .error", "'readings' is a spout")

        _pick(page, "tag")  # previewed, then applied after the page asks
        _preview(page, "edge")
        page.wait_text("#move-plan h3", "Preview: move tag to edge, against revision 1")
        assert "tag cloud → edge" in page.text("#move-plan .diff .moved")
        assert "the cloud workers, the edge agents" in page.text("#move-plan .diff .domains")
        assert page.count("#move-not-built") == 0
        _fits(page)
        page.shot("move-preview", at="#move-panel")
        assert page.js("return document.activeElement.id;") == "move-apply"
        page.driver.switch_to.active_element.send_keys(Keys.ENTER)
        page.wait_text("#move-apply-ask", "Move tag to edge, against revision 1?")
        assert page.js("return document.activeElement.id;") == "move-apply-confirm"
        page.driver.switch_to.active_element.send_keys(Keys.ENTER)
        page.wait_text("#move-result .ok", "revision 2 applied", 120)
        assert page.count("#move-plan *") == 0
        assert _on_edge(daemons) == {"readings", "tag"}
        history = daemons.api("/api/v1/topologies/mover/revisions")
        assert [(r["action"], r["status"]) for r in history["revisions"]] == [
            ("submit", "applied"),
            ("move", "applied"),
        ]
        wait_for(
            lambda: daemons.api("/api/v1/topologies/mover/revisions")["agents"] == {"gw-site0": 2},
            60,
            "the agent switched to revision 2",
        )
        wait_for(lambda: _where(page)["tag"] == "edge", 30, "tag listed on the edge")
        publish(20)  # after the agent's switch: its copy of tag handles them
        wait_for(lambda: _tagged(out, "edge") >= 20, 60, "readings tagged on the agent")

        # stale: previewed against revision 2, but someone else moves tag back meanwhile
        _preview(page, "cloud")
        page.wait_text("#move-plan h3", "Preview: move tag to cloud, against revision 2")
        status, _ = _post(daemons, "/api/v1/topologies/mover/move?components=tag&to=cloud&base=2")
        assert status == 202
        wait_for(lambda: _applied(daemons, 3), 120, "someone else's move applied")
        page.wait_text("#move-base", "3")
        page.click("#move-apply")
        page.click("#move-apply-confirm")
        page.wait_text(
            "#move-result .conflict", "changed by someone else — reload (now at revision 3)"
        )
        assert "made against revision 2, but the topology is at revision 3" in page.text(
            "#move-result"
        )
        page.shot("move-stale", at="#move-panel")
        page.click("#move-reload")
        page.wait_text("#move-result", "preview the move again: against revision 3")
        assert _on_edge(daemons) == {"readings"}
        assert daemons.api("/api/v1/topologies/mover/revisions")["current"] == 3
        wait_for(lambda: _where(page)["tag"] == "cloud", 30, "tag listed in the cloud again")

        # a viewer: no move form, and a move forged with its token is a 403
        status, viewer = _post(daemons, "/api/v1/tokens", {"role": "viewer"})
        assert status == 201
        page.click("#logout")
        page.find("#token")
        page.login(viewer["token"])
        page.go("#/topology/mover")
        page.find('g.component[data-component="tag"]')
        assert page.count("#move-panel, #move-preview, #move-apply") == 0
        forged = "/api/v1/topologies/mover/move?components=tag&to=edge&base=3"
        assert _post(daemons, forged, token=viewer["token"])[0] == 403
        assert daemons.api("/api/v1/topologies/mover/revisions")["current"] == 3
    finally:
        sensors.close()
