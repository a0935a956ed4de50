"""``GET /metrics``: a real master, worker and agent (with a real broker) scraped by HTTP.

The IoT example runs exactly once (its checkpoint interval is a second) with its
edge subgraph on the agent. The master's ``/metrics`` needs a viewer's token;
two scrapes, one before and one after more readings arrive, show the
components' counters strictly grown under the right labels, the agent's backlog,
and the cloud's and the agent's checkpoints moving. The agent's loopback status
port serves its own ``/metrics`` with no credentials.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from ..faults._site import AGENT, messages, readings, start_site
from ._daemons import Daemons
from ._support import wait_for
from .test_edge_cloud import Sensors, sensors

__all__ = ["sensors"]  # the fixture

pytestmark = pytest.mark.cluster

Sample = tuple[str, frozenset[tuple[str, str]]]
CLOUD = {"topology": "iot", "domain": "cloud"}
EDGE = {"topology": "iot", "domain": AGENT}


def _get(url: str, token: str | None = None) -> tuple[int, str, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def _parse(text: str) -> dict[Sample, float]:
    out: dict[Sample, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def _scraper(url: str, token: str | None) -> Callable[[], dict[Sample, float]]:
    def scrape() -> dict[Sample, float]:
        status, content_type, body = _get(url, token)
        assert status == 200, body
        assert content_type == CONTENT_TYPE_LATEST
        return _parse(body)

    return scrape


def _at(labels: dict[str, str], **more: str) -> frozenset[tuple[str, str]]:
    return frozenset({**labels, **more}.items())


def _viewer_token(daemons: Daemons) -> str:
    request = urllib.request.Request(
        f"{daemons.http}/api/v1/tokens",
        data=json.dumps({"role": "viewer", "description": "prometheus"}).encode(),
        headers={**daemons.auth, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        return str(json.loads(r.read())["token"])


def test_metrics_grow_between_scrapes_with_their_labels(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    site = start_site(daemons, mosquitto, tmp_path)
    url = f"{daemons.http}/metrics"
    status, _, body = _get(url)
    assert status == 401 and "no token" in json.loads(body)["error"]
    status, _, body = _get(url, "nobody.secret")
    assert status == 401
    scrape = _scraper(url, _viewer_token(daemons))
    scrape_agent = _scraper(f"http://127.0.0.1:{site.status_port}/metrics", None)

    land = ("headwater_component_executed_total", _at(CLOUD, component="land_readings"))
    windows = ("headwater_component_executed_total", _at(CLOUD, component="windows"))
    parse = (
        "headwater_node_component_executed_total",
        _at({"node": AGENT, "topology": "iot"}, component="parse"),
    )
    cloud_cp = ("headwater_checkpoint_latest_id", _at(CLOUD))
    edge_cp = ("headwater_checkpoint_latest_id", _at(EDGE))

    def reached(n: int) -> Callable[[], dict[Sample, float] | None]:
        def check() -> dict[Sample, float] | None:
            now = scrape()
            # the agent's figures come with its status report, every 2 s
            # (each component's counters come with its own report: wait for every one read)
            landed = all(now.get(k, 0) >= n for k in (land, windows, parse))
            return now if landed and now.get(cloud_cp, 0) and now.get(edge_cp, 0) else None

        return check

    rows = readings(40)  # 120 readings
    sensors.publish(messages(rows[:60]))
    first = wait_for(
        reached(60), 60, "60 readings parsed on the agent and landed, with checkpoints"
    )
    sensors.publish(messages(rows[60:]))
    second = wait_for(
        lambda: (
            now
            if (now := reached(120)()) is not None
            and now[cloud_cp] > first[cloud_cp]
            and now[edge_cp] > first[edge_cp]
            else None
        ),
        60,
        "every reading landed, and both domains checkpointed again",
    )

    # per-component counters, strictly grown, with exactly their labels
    for component in ("land_readings", "windows"):
        key = ("headwater_component_executed_total", _at(CLOUD, component=component))
        assert second[key] > first[key] > 0, component
    assert second[parse] > first[parse] > 0
    # what a scaling decision reads (issue 35): busy time and tuples received, per component
    for name in ("received_total", "busy_seconds_total"):
        assert second[(f"headwater_component_{name}", _at(CLOUD, component="windows"))] > 0
    tasks_api = daemons.api("/api/v1/topologies/iot/metrics")["tasks"].values()
    assert any(t["busy_ns"] > 0 and t["received"] > 0 for t in tasks_api)
    emitted = [k for k in second if k[0] == "headwater_component_emitted_total"]
    cloud_components = {c["name"] for c in daemons.api("/api/v1/topologies/iot")["components"]}
    assert {dict(labels)["component"] for _, labels in emitted} == cloud_components
    for _, labels in emitted:
        assert {k for k, _ in labels} == {"topology", "domain", "component"}
    tasks = [k for k in second if k[0] == "headwater_task_executed_total"]
    assert tasks and all(
        {k for k, _ in labels} == {"topology", "domain", "component", "task", "container"}
        for _, labels in tasks
    )
    # the agent: online, its backlog, its uplink; both domains' checkpoints
    node = {"node": AGENT}
    assert second[("headwater_node_online", _at(node))] == 1.0
    assert ("headwater_node_backlog_bytes", _at(node)) in second
    assert ("headwater_node_backlog_batches", _at(node)) in second
    assert second[("headwater_node_uplink_connected", _at(node, topology="iot"))] == 1.0
    assert second[("headwater_node_health", _at(node, health="ok"))] == 1.0
    for domain in (CLOUD, EDGE):
        assert second[("headwater_checkpoint_duration_seconds", _at(domain))] > 0
        assert (
            second[("headwater_checkpoints_started_total", _at(domain))]
            >= second[("headwater_checkpoint_latest_id", _at(domain))]
        )

    # the agent's own page: no token, its edge domain's components and checkpoints
    mine = scrape_agent()
    assert ("headwater_node_backlog_bytes", _at(node)) in mine
    assert mine[("headwater_node_attached", _at(node))] == 1.0
    assert mine[("headwater_component_executed_total", _at(EDGE, component="parse"))] > 0
    assert mine[("headwater_checkpoint_latest_id", _at(EDGE))] >= first[edge_cp]
    assert ("headwater_checkpoint_latest_id", _at(CLOUD)) not in mine
