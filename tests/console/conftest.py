"""Fixtures of the console tests: the daemons, and a real headless Chromium through Selenium.

The browser is Debian's ``chromium`` driven by its ``chromium-driver``, headless
(``--headless=new``); ``--no-sandbox`` because the tests run as root in a container.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service

from .._workers import KEPT
from ..integration.conftest import daemons  # noqa: F401  (the same fixture)

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"


WINDOW = (1500, 1000)


def _start(profile: Path) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--user-data-dir={profile}",
        *(["--no-sandbox"] if os.geteuid() == 0 else []),
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    KEPT.add(driver.service.process.pid)  # chromedriver: Chromium is its child
    return driver


def _fresh(driver: webdriver.Chrome) -> bool:
    """A new page's state: one new blank tab (the console keeps its token in the tab's
    session storage, which a new tab starts without) at the default size, no cookies, the
    console log drained. False if the browser no longer answers."""
    try:
        with contextlib.suppress(NoAlertPresentException):
            driver.switch_to.alert.dismiss()
        old = driver.window_handles
        driver.switch_to.new_window("tab")
        new = driver.current_window_handle
        for handle in old:
            driver.switch_to.window(handle)
            driver.close()
        driver.switch_to.window(new)
        driver.delete_all_cookies()
        driver.set_window_size(*WINDOW)
        driver.get_log("browser")  # type: ignore[no-untyped-call]
    except Exception:
        return False
    return True


def _quit(driver: webdriver.Chrome) -> None:
    KEPT.discard(driver.service.process.pid)
    with contextlib.suppress(Exception):  # already gone
        driver.quit()


@pytest.fixture(scope="session")
def _chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[webdriver.Chrome]]:
    """One Chromium per worker (each start is about 3 s), restarted if a test broke it."""
    held: list[webdriver.Chrome] = []
    try:
        yield held
    finally:
        for driver in held:
            _quit(driver)


@pytest.fixture
def browser(
    _chromium: list[webdriver.Chrome], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[webdriver.Chrome]:
    """The worker's Chromium on a new blank tab (``_fresh``), started again if the last
    test left it unanswering."""
    if _chromium and not _fresh(_chromium[0]):
        _quit(_chromium.pop())
    if not _chromium:
        _chromium.append(_start(tmp_path_factory.mktemp("chromium")))
    driver = _chromium[0]
    try:
        yield driver
    except BaseException:
        for entry in driver.get_log("browser"):  # type: ignore[no-untyped-call]
            print("browser:", entry)
        raise
    finally:  # no page left polling a master that is gone until the next test
        with contextlib.suppress(Exception):
            driver.get("about:blank")
