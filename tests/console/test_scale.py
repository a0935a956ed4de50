"""Issue 18: the page keeps up with a topology of 200 components on 50 agents.

A synthetic topology (``_synthetic.py``) through the console's real modules in
headless Chromium: every component is drawn (the edge side as one lane
"50 agents", times sign first), 30 updates are made, and the page still
answers a click; a component that raised is marked, and its exception (markup
in it) is shown as text.
The figures are printed, not asserted; ``python -m bench console`` measures
them for bench/RESULTS.md.
"""

from __future__ import annotations

import pytest
from selenium import webdriver

from ..integration._daemons import Daemons
from ._synthetic import EXCEPTION_MESSAGE, EXCEPTION_TRACEBACK, measure, snapshots

pytestmark = pytest.mark.cluster


def test_two_hundred_components_on_fifty_agents(
    daemons: Daemons, browser: webdriver.Chrome
) -> None:
    daemons.start_master()
    result = measure(browser, daemons.http + "/", snapshots(200, 50, 30))
    assert result["boxes"] == 200
    assert result["lanes"] == ["\u00d750 agents", "cloud"]
    assert result["uplinks"] == 20  # one per first-layer cloud component, from the edge lane
    assert len(result["update_ms"]) == 29
    print(
        f"first render {result['first_ms']:.0f} ms; updates median "
        f"{sorted(result['update_ms'])[14]:.0f} ms; snapshot {result['bytes']} bytes"
    )
    # and it still answers: a click selects a component and shows its two instances
    browser.find_element("css selector", 'g.component[data-component="c3_4"]').click()
    assert browser.find_element("css selector", "#component-detail h2").text.startswith("c3_4")
    assert len(browser.find_elements("css selector", "#instances tbody tr")) == 2
    busy = [e.text for e in browser.find_elements("css selector", "#instances tbody td.busy")]
    assert len(busy) == 2 and all(b == "–" or b.endswith(" %") for b in busy)  # noqa: RUF001
    assert len(browser.find_elements("css selector", "g.component.selected")) == 1

    # a component whose code raised: marked, and its exception shown as text, never as markup
    css = 'g.component[data-component="c0_0"]'
    assert "failed" in str(browser.find_element("css selector", css).get_attribute("class"))
    browser.find_element("css selector", css).click()
    summary = browser.find_element("css selector", "#component-detail details summary")
    assert summary.text.endswith(EXCEPTION_MESSAGE)
    summary.click()
    pre = browser.find_element("css selector", "#component-detail details pre")
    assert pre.get_attribute("textContent") == EXCEPTION_TRACEBACK
    assert not browser.find_elements("css selector", "#scale img, #scale script")
