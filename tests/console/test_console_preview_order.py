"""The package panel as a hasty operator uses it, in headless Chromium, on a master alone.

Two previews in a row (rescale count to 2, then at once to 3) whose first answer comes back
last: the page shows the second (it showed whichever answered last, with an Apply for it);
and a palette attach typed with parallelism 0 is refused by the master, as the operator
typed it (the page sent 1 instead).
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import Select

from ..cloud.test_package_edits import _package
from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

# the page's fetch, with the answer to a preview of count:2 held until a later one came back
SLOW_FIRST = """
const real = window.fetch;
window.__held = 'waiting';
window.fetch = async (url, opts) => {
  const res = await real(url, opts);
  if (String(url).includes('dry_run=1') && String(url).includes('count%3A2')) {
    await new Promise((ok) => { window.__release = ok; });
    window.__held = 'released';
  }
  return res;
};
"""


def test_the_newest_preview_is_the_one_shown(
    daemons: Daemons, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    daemons.start_master()
    request = urllib.request.Request(
        f"{daemons.http}/api/v1/topologies?entry=topo.py",
        data=_package(tmp_path),
        headers={**daemons.auth, "Content-Type": "application/zip"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as r:
        assert r.status == 201
    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(daemons.token)
    page.go("#/topology/pk")
    page.find("#package-panel")
    page.find('#pkg-files button[data-path="steps.py"]')
    Select(page.find("#pkg-component")).select_by_value("count")
    page.js(SLOW_FIRST)

    scale = page.find("#pkg-parallelism")
    for n in ("2", "3"):
        scale.clear()
        scale.send_keys(n)
        page.click("#pkg-rescale")
    page.wait_text("#pkg-preview", "count 1 → 3", 60)
    wait_for(lambda: page.js("return typeof window.__release === 'function';"), 30, "held")
    page.js("window.__release();")
    wait_for(lambda: page.js("return window.__held;") == "released", 30, "the late answer")
    page.wait_text("#pkg-preview", "Apply")
    assert "count 1 → 3" in page.text("#pkg-preview")
    assert "count 1 → 2" not in page.text("#pkg-preview")

    count = page.find("#palette-parallelism")
    count.clear()
    count.send_keys("0")
    page.click("#palette-preview")
    page.wait_text("#pkg-refused", "parallelism is a whole number from 1", 60)
