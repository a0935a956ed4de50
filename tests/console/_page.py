"""The console page as a test drives it: log in, go to a view, read it, wait on it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from .._wait import wait_for

_RATE = re.compile(r"(in|out) ([0-9.]+)(k?)/s")


class Page:
    def __init__(self, driver: webdriver.Chrome, base: str, shots: Path) -> None:
        self.driver, self.base, self.shots = driver, base.rstrip("/"), shots

    def open(self) -> None:
        self.driver.get(self.base + "/")

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def text(self, css: str) -> str:
        """The text of the first element ``css`` selects ('' for none)."""
        return str(
            self.js(
                "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
                css,
            )
        )

    def count(self, css: str) -> int:
        return int(self.js("return document.querySelectorAll(arguments[0]).length;", css))

    def find(self, css: str, timeout: float = 30) -> WebElement:
        return wait_for(
            lambda: next(iter(self.driver.find_elements(By.CSS_SELECTOR, css)), None),
            timeout,
            f"{css} on the page",
        )

    def click(self, css: str, timeout: float = 30) -> None:
        """Click the first element ``css`` selects; again if the page redrew it meanwhile
        (a table refreshed by a snapshot replaces its rows)."""

        def clicked() -> bool:
            try:
                self.find(css, timeout).click()
            except StaleElementReferenceException:
                return False
            return True

        wait_for(clicked, timeout, f"a click on {css}")

    def wait_text(self, css: str, part: str, timeout: float = 30) -> str:
        seen = [""]  # what it last showed, for the failure's message

        def has() -> str | None:
            seen[0] = text = self.text(css)
            return text if part in text else None

        try:
            return wait_for(has, timeout, f"{part!r} in {css}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; it showed {seen[0][-500:]!r}") from None

    def login(self, token: str) -> None:
        self.find("#token").send_keys(token)
        self.find("#login-button").click()
        wait_for(lambda: self.text("#who"), 15, "the page to say who is logged in")

    def go(self, route: str) -> None:
        self.js("location.hash = arguments[0];", route)

    def rates(self, component: str, agent: str = "") -> tuple[float, float]:
        """(in, out) per second as the DAG box of ``component`` (on ``agent``) shows them."""
        css = f'g.component[data-component="{component}"][data-agent="{agent}"] .rates'
        text = self.text(css)
        assert "out " in text, f"no rates in {css}: {text!r}"
        found = {way: float(n) * (1000 if k else 1) for way, n, k in _RATE.findall(text)}
        return found.get("in", 0.0), found.get("out", 0.0)

    def shot(self, name: str, at: str = "") -> None:
        """Save the window as ``name``.png, from the top or with ``at`` (a selector) in view."""
        if at:
            self.js("document.querySelector(arguments[0]).scrollIntoView({block: 'end'});", at)
        else:
            self.js("window.scrollTo(0, 0);")
        self.shots.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(self.shots / f"{name}.png"))
