"""The component detail's logs in a real headless Chromium: a master, a worker, wordcount.

Clicked as an admin, a cloud component shows the last lines of its container's log and of
its own instances' logs, fetched from the worker through the master, as text (markup in a
log stays text); a viewer's page has no logs section at all.
"""

from __future__ import annotations

import json
import runpy
from collections import Counter
from pathlib import Path

import pytest
from selenium import webdriver

from headwater.common.security import TokenStore

from ..integration._daemons import Daemons
from ..integration._support import EXAMPLES, wait_for
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]
WORDCOUNT = EXAMPLES / "iot" / "wordcount.py"


def _counts(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for f in out.glob("count-*.json"):
        total.update(json.loads(f.read_text()))
    return total


def test_a_component_shows_its_logs_to_an_admin_and_none_to_a_viewer(
    daemons: Daemons, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    daemons.start_master()
    daemons.start_worker("w1", {"WORDCOUNT_OUTPUT": str(out)})
    wait_for(lambda: [n["online"] for n in daemons.api("/api/v1/nodes")] == [True], 30, "w1")
    daemons.cli("submit", str(WORDCOUNT), "--containers", "1")
    expected = Counter(runpy.run_path(str(WORDCOUNT))["expected_counts"]())
    wait_for(lambda: _counts(out) == expected, 90, "exact word counts")
    tasks = daemons.api("/api/v1/topologies/wordcount/metrics")["tasks"]
    count_tasks = sorted(int(t) for t, m in tasks.items() if m["component"] == "count")
    other = next(int(t) for t, m in tasks.items() if m["component"] != "count")
    home = tmp_path / "w1" / "wordcount" / "container-0"
    with (home / "container.log").open("a") as f:
        f.write("container says <b>hello</b>\n")
    for t in count_tasks:
        with (home / f"task-{t}.log").open("a") as f:
            f.write(f"count task {t} was here\n")

    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(daemons.token)
    page.go("#/topology/wordcount")
    page.click('g.component[data-component="count"]')  # again if the DAG redrew it
    page.wait_text("#component-logs", "Reload logs", 30)
    container = page.text('#component-logs .log[data-log="container"] pre')
    assert container.endswith("container says <b>hello</b>\n")
    assert page.count("#component-logs pre b") == 0  # text, never markup
    for t in count_tasks:
        shown = page.text(f'#component-logs .log[data-log="task-{t}.log"] pre')
        assert shown.endswith(f"count task {t} was here\n")
    assert page.count(f'#component-logs .log[data-log="task-{other}.log"]') == 0  # not count's
    page.shot("component-logs", at="#component-logs")

    with (home / f"task-{count_tasks[0]}.log").open("a") as f:  # fetched again on reload
        f.write("and again\n")
    page.find("#logs-reload").click()
    page.wait_text(f'#component-logs .log[data-log="task-{count_tasks[0]}.log"] pre', "and again")

    viewer = TokenStore(tmp_path / "master" / "tokens.json").create("viewer")
    page.find("#logout").click()
    page.wait_text("#login-reason", "logged out")
    page.login(viewer)
    assert page.text("#who").startswith("viewer")
    page.go("#/topology/wordcount")
    page.click('g.component[data-component="count"]')  # again if the DAG redrew it
    page.find("#instances")  # the detail is shown...
    assert page.count("#component-logs") == 0  # ...without logs
    assert "was here" not in page.text("main")
