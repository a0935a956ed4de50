"""The console's models view: a rollout and a rollback made with the page's controls.

A master, a worker and one agent run the IoT example (its ``anomaly`` step on
the edge runs the model its package names) on readings published through
Mosquitto; a model version is uploaded through the API. On the page an admin
rolls version 1 out to ``iot/anomaly`` in waves with a guard and the agent runs
it (its ``model:iot/anomaly`` report), the wave's guard values and verdict
show, then rolls back to the hand-set detector; each rollout's phase shows
live. A viewer's page has no rollout form.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver

from tests._artifacts import artifact

from ..integration._daemons import Daemons
from ..integration._support import EXAMPLES, wait_for
from ..integration.test_edge_cloud import Sensors, SteadySensors, _agent_args, _node
from ..integration.test_model_rollout import _messages
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(400)]
MODEL = "iot-anomaly"
ROW = f'section[data-model="{MODEL}"] tr[data-rollout="{{}}"] .phase'


def _post(daemons: Daemons, path: str, data: bytes, kind: str) -> Any:
    req = urllib.request.Request(
        daemons.http + path,
        data=data,
        method="POST",
        headers={**daemons.auth, "Content-Type": kind},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def _live(daemons: Daemons) -> float | None:
    live = _node(daemons, "gw-site0")["metrics"].get("model:iot/anomaly")
    return None if live is None else float(live)


def test_a_rollout_and_a_rollback_from_the_models_view(
    daemons: Daemons, mosquitto: tuple[str, int], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    daemons.start_master()
    daemons.start_worker("w1", env={"IOT_OUT": str(tmp_path / "out")})
    daemons.start_agent("gw-site0", *_agent_args(mosquitto, "site0", daemons.grpc))
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "the worker and the agent online",
    )
    daemons.cli("submit", str(EXAMPLES / "iot" / "pipeline.py"))
    wait_for(
        lambda: _node(daemons, "gw-site0")["uplinks"].get("iot", {}).get("connected"),
        60,
        "the agent running its edge subgraph",
    )
    assert _live(daemons) is None  # the hand-set detector: no model shipped yet
    up = _post(daemons, f"/api/v1/models/{MODEL}", artifact(threshold=6.0), "application/json")
    assert up["version"] == 1
    sensors = Sensors(*mosquitto)
    publisher = SteadySensors(sensors, _messages(20 * 600), 20)  # the rollout judges by them
    publisher.start()
    try:
        _scenario(daemons, Page(browser, daemons.http, SCREENSHOTS))
    finally:
        publisher.stop.set()
        publisher.join(10)
        sensors.close()


def _scenario(daemons: Daemons, page: Page) -> None:
    page.open()
    page.login(daemons.token)
    page.go("#/models")
    form = f'section[data-model="{MODEL}"] .rollout-form'
    page.find(f"{form} input[name=version]")
    assert page.js(f"return document.querySelector('{form} input[name=version]').value") == "1"
    page.find(f"{form} input[name=topology]").send_keys("iot")
    page.find(f"{form} input[name=component]").send_keys("anomaly")
    watch = page.find(f"{form} input[name=watch_s]")
    watch.clear()
    watch.send_keys("3")
    rate = page.find(f"{form} input[name=max_anomaly_rate]")
    rate.clear()
    rate.send_keys("0.5")
    page.find(f"{form} input[name=waves]").send_keys("50,100")
    page.find(f"{form} input[name=guards]").send_keys("dead_letters<=0")
    page.find(f"{form} button.rollout").click()
    page.wait_text(f"{form} .rollout-result", "rollout 1")
    page.wait_text(ROW.format(1), "done", 120)
    (done,) = daemons.api(f"/api/v1/models/{MODEL}/rollouts")
    assert (done["phase"], done["waves"]) == ("done", [50.0, 100.0])
    assert done["guards"] == ["errors<=0", "anomalies/scored<=0.5", "dead_letters<=0"]
    (stage,) = done["stages"]  # one agent: the first wave has it all; the last is not watched
    assert (stage["stage"], stage["agents"], stage["ok"]) == ("wave 1 (50%)", ["gw-site0"], True)
    waves = f'section[data-model="{MODEL}"] tr[data-rollout="1"] .waves'
    assert page.find(waves).text == "50% 100%"
    row = f'section[data-model="{MODEL}"] tr[data-stage="1/0"]'
    assert page.find(f"{row} .verdict").text == "within bounds"
    shown = page.find(f"{row} .guards").text
    assert (
        shown.startswith("errors<=0: 0; anomalies/scored<=0.5: ") and "dead_letters<=0: 0" in shown
    )
    wait_for(lambda: _live(daemons) == 1.0, 30, "the agent running version 1")
    page.shot("models")

    page.find(f"{form} button.rollback-model").click()
    page.wait_text(ROW.format(2), "done", 120)
    last = daemons.api(f"/api/v1/models/{MODEL}/rollouts")[-1]
    assert (last["kind"], last["phase"]) == ("rollback", "done")
    wait_for(lambda: _live(daemons) == 0.0, 30, "the agent back on the hand-set detector")

    viewer = json.dumps({"role": "viewer"}).encode()
    token = _post(daemons, "/api/v1/tokens", viewer, "application/json")["token"]
    page.find("#logout").click()
    page.login(token)
    page.go("#/models")
    page.find(f'section[data-model="{MODEL}"] tr[data-rollout="2"]')
    assert page.count(".rollout-form") == 0
