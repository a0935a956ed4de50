"""The topology page's health panel in a real headless Chromium.

A master and a worker run the editable example; with the policy set to recommend
(`headwater health --mode`), the page shows the health manager's mode, read from GET
.../health. Then issue 35's skew scenario (``tests/integration/test_health_skew.py``'s
topology and writer: one key carries 80% of the records, all to one of ``counter``'s 3
tasks): the DAG marks ``counter`` as skewed (its class, its label, the reason as its
tooltip), the panel shows the diagnosis with the hot key and the share of the load it
carries, and the reports taken with the component's rates before and after; with the
policy set to off, the diagnosis goes and so does the mark.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from selenium import webdriver

from headwater.common.connectors._log_spout import append_records
from headwater.common.plan._routing import key_hash

from ..integration._daemons import Daemons
from ..integration._support import EXAMPLES, TOPOLOGIES, wait_for
from ..integration.test_health_skew import COST, FIRST, HOT, PAD, TASKS, Writer, key_of
from ._page import Page
from .conftest import SCREENSHOTS

COUNTER = 'g.component[data-component="counter"]'

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def test_the_topology_page_shows_its_health_manager(
    daemons: Daemons, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    daemons.start_master(extra=("--health-interval", "0.5"))
    daemons.start_worker("w1", {"EDITABLE_OUT": str(tmp_path / "out")})
    wait_for(lambda: [n["online"] for n in daemons.api("/api/v1/nodes")] == [True], 30, "w1")
    daemons.cli("submit", str(EXAMPLES / "editable" / "topology.py"))
    daemons.cli("health", "editable", "--mode", "recommend")
    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(daemons.token)
    page.go("#/topology/editable")
    assert page.wait_text("#health-mode", "mode recommend", 30) == "mode recommend"
    assert "Diagnoses (0)" in page.text("#health")
    assert "Actions taken (0)" in page.text("#health")


def test_the_dag_marks_a_skewed_component_and_the_panel_shows_its_hot_key(
    daemons: Daemons, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    env = {
        "HW_TEST_LOG": str(tmp_path / "log"),
        "HW_TEST_OUT": str(tmp_path / "out"),
        "HW_TEST_COST": str(COST),
    }
    daemons.start_master(extra=("--health-interval", "1"))
    daemons.start_worker("w1", env)
    wait_for(lambda: [n["online"] for n in daemons.api("/api/v1/nodes")] == [True], 30, "w1")
    append_records(tmp_path / "log", 0, [[key_of(i), i, PAD] for i in range(FIRST)])
    daemons.cli("submit", str(TOPOLOGIES / "skew.py"))  # policy auto: skew is only reported
    writer = Writer(tmp_path / "log")
    writer.start()
    try:
        page = Page(browser, daemons.http, SCREENSHOTS)
        page.open()
        page.login(daemons.token)
        page.go("#/topology/skew")
        page.find(f"{COUNTER}.diagnosed.skew", 60)
        tasks = daemons.api("/api/v1/topologies/skew/metrics")["tasks"]
        counters = sorted(int(t) for t, v in tasks.items() if v.get("component") == "counter")
        hot = counters[key_hash(HOT) % TASKS]
        # the mark: a class, the kind written on the node, the reason as its tooltip
        assert page.js(f"return document.querySelector('{COUNTER}').dataset.diagnosis") == "skew"
        assert page.text(f"{COUNTER} .diagnosis-label") == f"⚠ skew (task {hot})"
        assert page.text(f"{COUNTER} title").startswith(f"skew (task {hot}): task {hot} receives")
        assert page.count("g.component.diagnosed") == 1  # log and sink are not
        # the panel: the diagnosis with the hot key and its share of the load, readable
        panel = '#health .diagnosis[data-kind="skew"][data-component="counter"]'
        keys = page.wait_text(f'{panel} li[data-figure="hot keys"]', f"{HOT} (", 30)
        share = re.fullmatch(rf"hot keys: {HOT} \((\d+)% of the load, 100% of its task's\)", keys)
        assert share is not None and 50 <= int(share.group(1)) <= 95, keys
        assert re.search(r"the task busy: \d+%", page.text(panel)), page.text(panel)
        # the reports taken, with counter's rates when taken and a window after
        rows = '#health-taken tr[data-action="report"][data-component="counter"]'

        def measured() -> list[str] | None:  # the newest report's after is still to come
            cells = page.js(
                "return [...document.querySelectorAll(arguments[0])].map((r) =>"
                " [r.querySelector('td.rates').textContent,"
                " r.querySelector('td.outcome').textContent]);",
                rows,
            )
            return next((c for c in cells if "→ in " in c[0]), None)

        text, outcome = wait_for(measured, 45, "a report with counter's rates after it")
        rates = r"in [0-9.]+/s, processed [0-9.]+/s, busy \d+%(, busiest \d+%)?"
        assert re.fullmatch(rf"{rates} → {rates}", text), text
        assert outcome == "applied"
        page.shot("topology-health")
        # the diagnosis goes (the policy set to off): so does the mark
        daemons.cli("health", "skew", "--mode", "off")
        wait_for(lambda: page.count("g.component.diagnosed") == 0, 20, "the mark to go")
        assert page.count(f"{COUNTER} .diagnosis-label") == 0
        assert "Diagnoses (0)" in page.text("#health")
    finally:
        writer.done.set()
        writer.join()
