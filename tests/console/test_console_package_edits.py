"""Issue 36: the IoT example's package edited in place from the console, in headless Chromium.

A master, a worker and two agents (site0, site1) with Mosquitto run ``examples/iot``
(``pipeline.py`` importing its siblings ``iot_steps.py`` and ``iot_io.py``) while the sensors
publish. Through the page alone: open smooth's code (``iot_steps.py``) from the DAG and change
it in the editor; rescale ``windows`` with the parallelism control; attach a tap from the
palette onto ``windows``; remove it; roll back to the first revision, confirming; preview an
upload of a zip of the whole package (smooth changed again), and cancel it. Before each
apply the master's preview (the plan diff) is on the page; each revision is applied (checked
through the API); at the end every reading is counted exactly once (the site windows equal
those recomputed offline from the readings published). Saves ``package-edit.png`` (the
editor with a preview) and ``palette.png`` into docs/console/.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import Select

from headwater.common._package import build_package

from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ..integration.test_edge_cloud import PIPELINE, Sensors, SteadySensors, _start_cluster
from ..integration.test_iot import SENSORS, _expected, _site_rows
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]
T = "/api/v1/topologies/iot"
SMOOTHED = "ewma + ALPHA * (value - ewma)"


def _applied(daemons: Daemons, revision: int) -> dict[str, Any] | None:
    r = daemons.api(f"{T}/revisions")
    rec = next((x for x in r["revisions"] if x["revision"] == revision), None)
    return rec if r["current"] == revision and rec and rec["status"] == "applied" else None


def _apply(page: Page, daemons: Daemons, revision: int, *shown: str) -> dict[str, Any]:
    """The preview shows ``shown``; Apply; the revision is applied (on the page and the API)."""
    for part in shown:
        page.wait_text("#pkg-preview", part, 60)
    assert page.count("#pkg-refused") == 0
    page.click("#pkg-apply")
    page.wait_text("#pkg-result", f"revision {revision} applied", 180)
    rec = _applied(daemons, revision)
    assert rec is not None
    return rec


def _tasks_of(daemons: Daemons, component: str) -> list[dict[str, Any]]:
    tasks = daemons.api(f"{T}/metrics")["tasks"].values()
    return [m for m in tasks if m.get("component") == component]


def test_the_iot_package_is_edited_in_place_from_the_page(
    daemons: Daemons, mosquitto: tuple[str, int], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    _worker, _agents, out = _start_cluster(daemons, mosquitto, tmp_path)
    readings = list(SENSORS["readings"](2, 3, 300))  # 1800 readings, 3 min of event time
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    sensors = Sensors(*mosquitto)
    publisher = SteadySensors(sensors, messages, 15)  # about 2 min: the edits happen meanwhile
    publisher.start()
    try:
        page = Page(browser, daemons.http, SCREENSHOTS)
        _scenario(page, daemons, tmp_path)
        wait_for(lambda: not publisher.is_alive(), 240, "every reading published")
        assert publisher.sent == {"site0": 900, "site1": 900}
        expected = _expected([r for _, r in readings])
        wait_for(
            lambda: _site_rows(out / "site_windows") == expected,
            120,
            "every closed window of both sites, each reading counted once",
        )
        assert len(expected) == 2 * 29  # 2 sites x 29 closed windows of 10 s
    finally:
        publisher.stop.set()
        publisher.join(30)
        sensors.close()


def _changed_package(tmp_path: Path) -> Path:
    """A zip of the IoT example's folder as `headwater submit` packs it, smooth changed."""
    folder = tmp_path / "iot-src"
    shutil.copytree(PIPELINE.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    steps = folder / "iot_steps.py"
    steps.write_text(steps.read_text().replace(SMOOTHED, "ewma + 0.25 * (value - ewma)"))
    zipped = tmp_path / "iot.zip"
    zipped.write_bytes(build_package(folder / "pipeline.py")[0])
    return zipped


def _scenario(page: Page, daemons: Daemons, tmp_path: Path) -> None:
    page.open()
    page.login(daemons.token)
    page.go("#/topology/iot")
    page.find("#package-panel")
    page.find('#pkg-files button[data-path="iot_steps.py"]')
    page.find('#pkg-files button[data-path="iot_io.py"]')

    # -- smooth's code, opened from the DAG, changed in the editor
    page.click('g.component[data-component="smooth"]')
    page.wait_text("#pkg-component option:checked", "smooth")
    page.click("#pkg-open-code")
    page.wait_text("#pkg-file-status", "iot_steps.py")
    page.wait_text("#pkg-file-status", "smooth: smooth, line")
    code = page.find("#pkg-code")
    assert SMOOTHED in str(code.get_attribute("value"))
    # select ALPHA in smooth's line, as a double-click would, and type over it
    page.js(
        "const t = arguments[0], at = t.value.indexOf(arguments[1]) + 'ewma + '.length;"
        "t.focus(); t.setSelectionRange(at, at + 'ALPHA'.length);",
        code,
        SMOOTHED,
    )
    code.send_keys("0.5")
    assert "ewma + 0.5 * (value - ewma)" in str(code.get_attribute("value"))
    page.wait_text('#pkg-files button[data-path="iot_steps.py"]', "•")  # changed, unapplied
    assert page.count("#pkg-code + *, .code-editor .tok-keyword") > 0  # highlighted
    page.click("#pkg-preview-code")
    page.wait_text("#pkg-preview", "replace (keeps its state): smooth", 60)
    page.wait_text("#pkg-preview", "the edge agents")
    page.shot("package-edit", at="#package-panel")
    rec = _apply(page, daemons, 2, "unchanged (keeps its state)")
    assert rec["diff"]["replaced"] == ["smooth"]
    files = daemons.api(f"{T}/files")
    steps = next(f for f in files["files"] if f["path"] == "iot_steps.py")
    assert files["revision"] == 2 and "ewma + 0.5 * (value - ewma)" in steps["text"]

    # -- windows on two instances, with the parallelism control
    page.click('g.component[data-component="windows"]')
    page.wait_text("#pkg-component option:checked", "windows")
    scale = page.find("#pkg-parallelism")
    scale.clear()
    scale.send_keys("2")
    page.click("#pkg-rescale")
    rec = _apply(page, daemons, 3, "windows 1 → 2", "the cloud workers")
    assert rec["diff"]["replaced"] == ["windows"]
    wait_for(lambda: len(_tasks_of(daemons, "windows")) == 2, 60, "two windows tasks")

    # -- a tap from the palette, reading windows
    # one of its functions, as a keyed step (state per sensor): previewed, then cancelled
    Select(page.find("#palette-step")).select_by_value("iot_steps:smooth")
    assert page.find("#palette-run").get_attribute("value") == "keyed"
    page.find("#palette-key").send_keys("sensor")
    Select(page.find("#palette-input")).select_by_value("windows")
    page.click("#palette-preview")
    page.wait_text("#pkg-preview", "attach (starts with empty state): smooth_1", 60)
    page.click("#pkg-cancel")
    Select(page.find("#palette-step")).select_by_value("tap")
    assert not page.find("#palette-function").is_displayed()
    page.wait_text("#palette-doc", "counts what it sees")
    Select(page.find("#palette-input")).select_by_value("windows")
    assert page.find("#palette-name").get_attribute("value") == "tap_1"
    page.click("#palette-preview")
    page.wait_text("#pkg-preview", "attach (starts with empty state): tap_1", 60)
    page.shot("palette", at="#package-panel")
    rec = _apply(page, daemons, 4)
    assert rec["diff"]["added"] == ["tap_1"]
    wait_for(
        lambda: sum(m.get("executed", 0) for m in _tasks_of(daemons, "tap_1")) > 0,
        90,
        "closed windows through the tap",
    )

    # -- and removed again
    page.find('#pkg-component option[value="tap_1"]')
    Select(page.find("#pkg-component")).select_by_value("tap_1")
    page.click("#pkg-remove")
    rec = _apply(page, daemons, 5, "remove (its state is dropped): tap_1")
    assert rec["diff"]["removed"] == ["tap_1"]
    sidecar = [f for f in daemons.api(f"{T}/files")["files"] if f["path"].endswith("attached.json")]
    assert sidecar == []  # the last one attached gone: the sidecar with it

    # -- roll back to the first revision, confirming; the question shows the diff
    page.go("#/revisions/iot")
    page.click('button.rollback[data-revision="1"]')
    page.wait_text("#rollback-1-ask", "Roll back to revision 1?")
    page.wait_text("#rollback-1-diff", "smooth", 60)
    page.wait_text("#rollback-1-diff", "windows 2 → 1")
    assert _applied(daemons, 5) is not None  # asked, nothing sent yet
    page.click("#rollback-1-confirm")
    page.wait_text("#edit-result", "revision 6 applied", 180)
    last = _applied(daemons, 6)
    assert last is not None and last["action"] == "rollback"
    assert sorted(last["diff"]["replaced"]) == ["smooth", "windows"]
    assert len(_tasks_of(daemons, "windows")) == 1 or wait_for(
        lambda: len(_tasks_of(daemons, "windows")) == 1, 60, "one windows task again"
    )

    # -- a zip of the whole package, uploaded: previewed (its siblings load with it), cancelled
    page.go("#/topology/iot")
    page.wait_text("#pkg-file-status", "revision 6")
    page.find("#pkg-zip").send_keys(str(_changed_package(tmp_path)))
    page.click("#pkg-preview-zip")
    page.wait_text("#pkg-preview", "replace (keeps its state): smooth", 60)
    page.click("#pkg-cancel")
    assert page.count("#pkg-apply") == 0 and daemons.api(f"{T}/revisions")["current"] == 6

    # -- a viewer's page has none of it
    viewer = _viewer_token(daemons)
    page.find("#logout").click()
    page.login(viewer)
    page.go("#/topology/iot")
    page.find('g.component[data-component="windows"]')
    assert page.count("#package-panel, #pkg-code, #palette, #pkg-apply") == 0
    page.go("#/revisions/iot")
    page.find('tr[data-revision="2"]')
    assert page.count("button.rollback") == 0


def _viewer_token(daemons: Daemons) -> str:
    import urllib.request

    req = urllib.request.Request(
        daemons.http + "/api/v1/tokens",
        data=json.dumps({"role": "viewer"}).encode(),
        method="POST",
        headers={**daemons.auth, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return str(json.loads(r.read())["token"])
