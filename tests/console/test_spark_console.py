"""Issue 32: the Spark jobs pages in a real headless Chromium, against a real master and worker.

The worker runs the stand-in driver (``tests/integration/_standin_driver.py``, through the
documented hook ``HEADWATER_SPARK_DRIVER``), as the cluster tests of Spark jobs do: these
tests are of the page, not of Spark. One job submitted through the REST API succeeds, one
submitted with the CLI fails over and over; the page lists both with their exact states,
results, rows and error, marks the crash loop, shows a viewer no kill button and no log, shows
an admin the driver's log and kills the failing job after asking; an error holding markup is
shown as text.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver

from headwater.common.security import TokenStore

from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ..integration.test_spark_jobs import JOB, STANDIN, _call, _jobs, _submit
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]
FAILURE = "RuntimeError: stand-in failure 1"


def _cluster(daemons: Daemons) -> None:
    daemons.start_master()
    daemons.start_worker("w1", STANDIN)
    wait_for(lambda: [n["online"] for n in daemons.api("/api/v1/nodes")] == [True], 30, "w1")


def _cells(page: Page, job: str) -> dict[str, str]:
    """The text of each cell of ``job``'s row, by its class (its state by data-state)."""
    row = f'#spark-job-table tr[data-job="{job}"]'
    page.find(row)
    cells = {
        name: page.text(f"{row} td.{name}")
        for name in ("mode", "node", "result", "rows-read", "rows-written", "last-error")
    }
    cells["state"] = page.js(
        "return document.querySelector(arguments[0]).dataset.state;", f"{row} td.state"
    )
    return cells


def test_the_spark_jobs_page_lists_the_jobs_and_an_admin_kills_one(
    daemons: Daemons, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    _cluster(daemons)
    code, body = _submit(daemons, "job.py", JOB, name="tally", param="exit=0")
    assert (code, body["node"]) == (201, "w1"), body
    failing = tmp_path / "boom.py"
    failing.write_bytes(JOB)
    out = daemons.cli("spark", "submit", str(failing), "--every", "10m", "--param", "exit=1")
    assert out == "submitted Spark job 'boom' (every, on worker w1)\n"
    wait_for(lambda: _jobs(daemons)["tally"]["state"] == "succeeded", 60, "tally to succeed")
    wait_for(lambda: _jobs(daemons)["boom"]["crash_loop"], 60, "boom to crash-loop")

    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    viewer = TokenStore(tmp_path / "master" / "tokens.json").create("viewer")
    page.login(viewer)
    page.find("#nav-spark").click()
    page.find('#spark-job-table tr[data-job="boom"]')
    # the list, as a viewer sees it: every figure, no control
    assert page.js("return [...document.querySelectorAll('#spark-job-table th')]"
                   ".map((h) => h.textContent);") == [
        "job", "state", "mode", "node", "last run started", "ended", "result",
        "rows read", "written", "last error", "",
    ]  # fmt: skip
    assert _cells(page, "tally") == {
        "state": "succeeded",
        "mode": "once",
        "node": "w1",
        "result": "ok",
        "rows-read": "7",
        "rows-written": "3",
        "last-error": "",
    }
    assert _cells(page, "boom") == {
        "state": "failed",
        "mode": "every 10m",
        "node": "w1",
        "result": "failed",
        "rows-read": "7",
        "rows-written": "0",
        "last-error": FAILURE,
    }
    boom = '#spark-job-table tr[data-job="boom"]'
    assert page.text(f"{boom} .crash-loop") == "crash loop"
    assert page.js(
        "return document.querySelector(arguments[0]).title;", f"{boom} .crash-loop"
    ).startswith("Spark job 'boom' is crash-looping: 5 failures in ")
    assert page.count('#spark-job-table tr[data-job="tally"] .crash-loop') == 0
    assert page.count("main button") == 0
    page.click(f"{boom} td a")
    page.wait_text('#spark-job tr[data-fact="last error"]', FAILURE)
    assert page.text('#spark-job tr[data-fact="mode"] td') == "every 10m"
    assert page.text('#spark-job tr[data-fact="parameters"] td') == "exit=1"
    assert page.count("#spark-kill") == 0  # a viewer kills nothing...
    assert page.count("#job-logs") == 0  # ...and reads no log
    code, refused = _call(daemons, "DELETE", "/api/v1/spark/jobs/boom", token=viewer)
    assert code == 403, refused  # (as the API would refuse it anyway)

    # an admin: the driver's log, and a kill that asks first
    page.find("#logout").click()
    page.wait_text("#login-reason", "logged out")
    page.login(daemons.token)
    page.go("#/spark")
    page.find('#spark-job-table tr[data-job="boom"] .crash-loop')
    page.shot("spark-jobs")
    page.click(f"{boom} td a")
    log = page.wait_text('#job-logs .log[data-log="driver"] pre', "stand-in driver boom")
    assert log.splitlines()[-1] == "stand-in driver boom: job boom.py, params {'exit': '1'}"
    assert page.text('#job-logs .log[data-log="driver"] h4') == (
        f"on w1: {tmp_path / 'w1' / 'spark' / 'boom' / 'driver.log'}"
    )
    page.shot("spark-job")
    assert not page.find("#spark-kill-ask").is_displayed()
    page.find("#spark-kill").click()
    assert page.find("#spark-kill-ask").is_displayed()
    page.find("#spark-kill-cancel").click()  # asked, and not done
    assert not page.find("#spark-kill-ask").is_displayed()
    assert set(_jobs(daemons)) == {"boom", "tally"}
    page.find("#spark-kill").click()
    page.find("#spark-kill-confirm").click()
    wait_for(lambda: page.js("return location.hash;") == "#/spark", 15, "back to the list")
    wait_for(
        lambda: (
            page.count('#spark-job-table tr[data-job="boom"]') == 0
            and page.count('#spark-job-table tr[data-job="tally"]') == 1
        ),
        15,
        "boom to leave the list",
    )
    assert set(_jobs(daemons)) == {"tally"}
    # the last one killed through the API: the page says how to submit one
    assert _call(daemons, "DELETE", "/api/v1/spark/jobs/tally")[0] == 200
    text = page.wait_text("#spark-jobs", "No Spark job")
    assert text.startswith("No Spark job: submit one with headwater spark submit JOB.py")


def test_markup_in_a_jobs_error_is_shown_as_text(
    daemons: Daemons, browser: webdriver.Chrome
) -> None:
    _cluster(daemons)
    payload = "<img src=x onerror=\"document.title='pwned'\"> and <b>bold</b>"
    code, body = _submit(
        daemons, "job.py", JOB, name="markup", param=["exit=3", f"error={payload}"]
    )
    assert code == 201, body
    wait_for(lambda: _jobs(daemons)["markup"]["last_error"] == payload, 60, "the failure")

    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(daemons.token)
    page.go("#/spark")
    assert page.wait_text('tr[data-job="markup"] td.last-error', payload) == payload
    page.click('tr[data-job="markup"] td a')
    page.wait_text('#spark-job tr[data-fact="last error"] td', payload)
    assert page.text('#spark-job tr[data-fact="parameters"] td') == f"error={payload}, exit=3"
    page.wait_text('#job-logs .log[data-log="driver"] pre', "<img src=x")
    assert page.count("main img, main b") == 0  # text everywhere: no element made of it
    assert page.js("return document.title;") == "Headwater console"
