"""Fixtures of the console tests: the daemons, and a real headless Chromium through Selenium.

The browser is Debian's ``chromium`` driven by its ``chromium-driver``, headless
(``--headless=new``); ``--no-sandbox`` because the tests run as root in a container.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from ..integration.conftest import daemons  # noqa: F401  (the same fixture)

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "console"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1500,1000",
        f"--user-data-dir={tmp_path / 'chromium'}",
        *(["--no-sandbox"] if os.geteuid() == 0 else []),
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        yield driver
    except BaseException:
        for entry in driver.get_log("browser"):  # type: ignore[no-untyped-call]
            print("browser:", entry)
        raise
    finally:
        driver.quit()
