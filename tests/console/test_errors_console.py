"""The errors of a topology read the same everywhere: the console's topologies table, its DAG,
``GET /api/v1/topologies`` and ``headwater status``.

A master, a worker and an agent with Mosquitto run a topology whose edge bolt ``parse``
dead-letters malformed readings (20 of them) and whose cloud bolt ``check`` dead-letters
every fifth good one (6). The table said "errors 0" while the DAG flagged ``parse``: it
summed the cloud's components only. Now the table's figure is the sum of the figures
the DAG's boxes carry, exactly, and the API and the CLI give the same numbers; the
agent's own page (its status port) agrees with its own DAG too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver

from .._ports import free_port
from ..integration._daemons import Daemons
from ..integration._support import committed_rows, wait_for
from ..integration.test_edge_cloud import Sensors, _agent_args
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

TOPOLOGY = """
import json
import os
from functools import partial

from headwater import Bolt, DeadLetter, Reliability, Topology, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")


class Parse(Bolt):
    outputs = ("topic", "seq")

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        reading = json.loads(tup.values[1])
        if "seq" not in reading:
            raise DeadLetter("a reading without its seq")
        self.ctx.emit([tup.values[0], reading["seq"]])


class Check(Bolt):
    outputs = ("topic", "seq")

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        if tup.values[1] % 5 == 0:
            raise DeadLetter("a seq that is a multiple of 5")
        self.ctx.emit(tup.values)


topology = (
    Topology("errs", config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 0.3,
    })
    .add_spout("readings", partial(Readings, LOG, partitions=1), outputs=Readings.outputs,
               placement=edge())
    .add_bolt("parse", Parse, inputs={"readings": fields("topic")}, placement=edge())
    .add_bolt("check", Check, inputs={"parse": fields("topic")})
    .add_bolt("sink", partial(TransactionalFileSink, OUT + "/rows"),
              inputs={"check": fields("topic")})
)
"""
GOOD, BAD = 30, 20
DEAD_IN_THE_CLOUD = len([s for s in range(1, GOOD + 1) if s % 5 == 0])


def test_the_topologies_table_counts_what_the_dag_flags(
    daemons: Daemons, mosquitto: tuple[str, int], browser: webdriver.Chrome, tmp_path: Path
) -> None:
    out, code = tmp_path / "out", tmp_path / "code"
    code.mkdir()
    (code / "errs.py").write_text(TOPOLOGY)
    daemons.start_master()
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
    own_port = free_port()  # the agent's own page, on its status port
    daemons.start_agent(
        "gw-site0",
        *_agent_args(mosquitto, "site0", daemons.grpc, "--status-port", str(own_port)),
    )
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "the worker and the agent online",
    )
    daemons.cli("submit", str(code / "errs.py"))
    sensors = Sensors(*mosquitto)
    try:
        sensors.publish(
            [("sensors/site0/s0", json.dumps({"seq": s}).encode()) for s in range(1, GOOD + 1)]
            + [("sensors/site0/s0", json.dumps({"bad": b}).encode()) for b in range(BAD)]
        )
    finally:
        sensors.close()
    wait_for(
        lambda: len(committed_rows(out / "rows")) == GOOD - DEAD_IN_THE_CLOUD,
        90,
        "the good readings in the cloud",
    )

    def listed() -> dict[str, Any]:
        return next(t for t in daemons.api("/api/v1/topologies") if t["name"] == "errs")

    total = BAD + DEAD_IN_THE_CLOUD
    wait_for(lambda: listed()["errors"] == total, 60, "the agent's dead letters reported")
    row = listed()
    assert (row["errors"], row["dead_letters"], row["exceptions"], row["failed"]) == (
        total,
        total,
        0,
        0,
    )
    status = daemons.cli("status", "errs")
    assert f"errors {total}: {total} dead letters, 0 task crashes, 0 failed tuples" in status

    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(daemons.token)
    page.go("#/topologies")
    cell = 'tr[data-topology="errs"] td.errors'
    page.wait_text(cell, f"{total} ({total} dead letters)")
    table = int(page.find(cell).get_attribute("data-errors") or -1)
    page.go("#/topology/errs")
    page.find('g.component[data-component="sink"]')

    def dag() -> dict[str, int]:
        boxes = page.js(
            "return [...document.querySelectorAll('g.component')].map("
            "(g) => [g.dataset.component, Number(g.dataset.errors)]);"
        )
        return {name: n for name, n in boxes}

    wait_for(lambda: dag().get("parse") == BAD, 30, "the DAG flagging parse")
    assert dag() == {"readings": 0, "parse": BAD, "check": DEAD_IN_THE_CLOUD, "sink": 0}
    assert table == sum(dag().values()) == total

    # the agent's own page: its edge subgraph (and its outbox to the cloud), the same way
    page = Page(browser, f"http://127.0.0.1:{own_port}", SCREENSHOTS)
    page.open()
    page.go("#/topologies")
    page.wait_text(cell, f"{BAD} ({BAD} dead letters)")
    table = int(page.find(cell).get_attribute("data-errors") or -1)
    page.go("#/topology/errs")
    wait_for(lambda: dag().get("parse") == BAD, 30, "the agent's DAG flagging parse")
    assert table == sum(dag().values()) == BAD
