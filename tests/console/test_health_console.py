"""The topology page's health panel in a real headless Chromium: a master and a worker run
the editable example; with the policy set to recommend (`headwater health --mode`), the
page shows the health manager's mode, read from GET .../health."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver

from ..integration._daemons import Daemons
from ..integration._support import EXAMPLES, wait_for
from ._page import Page
from .conftest import SCREENSHOTS

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
