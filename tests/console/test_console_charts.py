"""Issue 36: the console's charts over time, read from the page, against the master's counters.

One small cluster (a master, a worker, one agent with Mosquitto) runs the edge-to-cloud
topology of the live-edit tests (``readings`` -> ``count`` on the agent, ``sink`` in the
cloud: one tuple in the sink per reading). The sensors publish at a steady 15 a second.
Through the page: click ``sink`` in the DAG, and its charts appear (the rate in and out,
latency, queue, backpressure, errors, per task), each with its data in ``data-points``.

- The console's rate agrees with the counters: the sink's ``executed`` counter read from
  the REST API (what ``headwater status`` shows) 30 s apart, each read right when a
  heartbeat moved it, over the time between, is within 5 % of the rate the page's chart
  shows for that same span.
- The rate steps up: the sensors' rate doubles, and the chart's newest points read about
  twice the rate before (1.6 to 2.4 times: the edge batches its uplink, the points span
  2 s).
- An edge component (``count``, on the agent) charts its agents' sum, without a latency
  chart (agents report none).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from pathlib import Path

import pytest
from selenium import webdriver

from ..integration import _editable_edge
from ..integration._daemons import Daemons
from ..integration._support import committed_rows, wait_for
from ..integration.test_edge_cloud import Sensors, _agent_args
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

RATE = 15.0
TOLERANCE = 0.05  # acceptance 4: within 5 %


class RateSensors(threading.Thread):
    """Publishes readings to site0 at ``rate`` a second, a rate the test may change."""

    def __init__(self, sensors: Sensors, rate: float) -> None:
        super().__init__(name="sensors", daemon=True)
        self.sensors, self.rate = sensors, rate
        self.stop = threading.Event()

    def run(self) -> None:
        due, seq = time.monotonic(), 0
        while not self.stop.wait(max(0.0, due - time.monotonic())):
            self.sensors.publish([(f"sensors/site0/s{seq % 3}", json.dumps({"seq": seq}).encode())])
            seq += 1
            due += 1.0 / self.rate


def _chart(page: Page, kind: str) -> dict[str, list[list[float]]]:
    """The lines of the chart ``kind`` as the page has them: {line: [[time, value], ...]}."""
    raw = page.js(
        "const c = document.querySelector(`svg.chart[data-chart='${arguments[0]}']`);"
        "return c ? c.getAttribute('data-points') : null;",
        kind,
    )
    return json.loads(raw) if raw else {}


def _fresh_count(daemons: Daemons) -> tuple[float, float]:
    """(the sink's executed counter, when it was reported): read until a heartbeat moves it,
    so the counter's time is known within the polling interval."""

    def executed() -> float:
        m = daemons.api("/api/v1/topologies/edgeedit/metrics")["components"]
        return float(m.get("sink", {}).get("executed", 0.0))

    before = executed()

    def moved() -> tuple[float, float] | None:
        now = executed()
        return (now, time.time()) if now != before else None

    return wait_for(moved, 15, "a heartbeat to move the sink's counter", interval=0.05)


def _rate_over(points: list[list[float]], t0: float, t1: float) -> float:
    """The chart's rate over [t0, t1]: each point's rate over the time since the point
    before, weighted by that time, over the points inside the span."""
    inside = [(t, r) for t, r in points if t0 <= t <= t1]
    grown = sum(r * (t - prev[0]) for prev, (t, r) in itertools.pairwise(inside))
    span = inside[-1][0] - inside[0][0]
    return grown / span


def test_a_component_s_chart_agrees_with_its_counters_and_steps_up_with_the_sensors(
    daemons: Daemons, mosquitto: tuple[str, int], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    daemons.start_master()
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
    daemons.start_agent("gw-site0", *_agent_args(mosquitto, "site0", daemons.grpc))
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "the worker and the agent online",
    )
    daemons.cli("submit", str(_editable_edge.write(tmp_path / "code", 1)))
    sensors = Sensors(*mosquitto)
    publisher = RateSensors(sensors, RATE)
    publisher.start()
    try:
        wait_for(lambda: committed_rows(out / "counts"), 90, "the first rows in the cloud")
        page = Page(browser, daemons.http, SCREENSHOTS)
        page.open()
        page.login(daemons.token)
        page.go("#/topology/edgeedit")
        page.click('g.component[data-component="sink"]')
        page.click('#charts button[data-window="60"]')
        page.find("svg.chart[data-chart='rate']")
        for kind in ("latency", "queue", "backpressure", "errors", "task-rate", "task-queue"):
            page.find(f"svg.chart[data-chart='{kind}']")

        def settled() -> bool:
            rates = [r for _, r in _chart(page, "rate").get("in", [])][-5:]
            return len(rates) == 5 and all(abs(r - RATE) < 0.3 * RATE for r in rates)

        wait_for(settled, 60, f"the chart's rate in near {RATE}/s")

        # -- acceptance 4: the chart's rate against the counters 30 s apart ------------------
        n0, t0 = _fresh_count(daemons)

        def thirty_seconds_on() -> tuple[float, float] | None:
            n, t = _fresh_count(daemons)  # the span the acceptance names, at a heartbeat
            return (n, t) if t - t0 >= 30.0 else None

        n1, t1 = wait_for(thirty_seconds_on, 60, "a heartbeat 30 s after the first reading")
        counters = (n1 - n0) / (t1 - t0)

        def charted() -> float | None:
            points = _chart(page, "rate").get("in", [])
            return _rate_over(points, t0, t1) if points and points[-1][0] >= t1 else None

        console = wait_for(charted, 15, "the chart to reach the second reading")
        assert counters == pytest.approx(console, rel=TOLERANCE), (counters, console)
        assert counters == pytest.approx(RATE, rel=0.15)

        # -- acceptance 2a: the sensors' rate doubles, the chart steps up --------------------
        before = _rate_over(_chart(page, "rate")["in"], t1 - 20, t1)
        publisher.rate = 2 * RATE

        def stepped() -> list[float] | None:
            rates = [r for _, r in _chart(page, "rate").get("in", [])][-4:]
            ok = len(rates) == 4 and all(1.6 * before <= r <= 2.4 * before for r in rates)
            return rates if ok else None

        after = wait_for(stepped, 60, f"the chart's rate to step up from {before:.1f}/s to 2x")
        print(f"counters {counters:.2f}/s, chart {console:.2f}/s; {before:.1f}/s -> {after}")
        page.shot("charts", at="#charts")

        # -- an edge component: its agents summed; no latency chart (agents report none) ----
        page.click('g.component[data-component="count"]')
        page.find("#charts[data-component='count'] svg.chart[data-chart='rate']")
        wait_for(
            lambda: any(r > 0 for _, r in _chart(page, "rate").get("in", [])),
            30,
            "count's rate on its chart",
        )
        assert page.count("#charts svg.chart[data-chart='latency']") == 0
    finally:
        publisher.stop.set()
        publisher.join(10)
        sensors.close()
