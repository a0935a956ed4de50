"""Fault: an agent is killed (SIGKILL) or stopped (SIGTERM) mid-stream and started again with
the same workdir, named by ``--id`` or not (the systemd unit gives none).

The restarted agent is the same node: listed once, online, health ok; the master confirms its
uplink and its backlog drains; every reading reaches the cloud exactly once; and the master
logs no task destroyed while pending when the agent goes away.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ..integration.test_edge_cloud import Sensors
from ._report import record
from ._site import AGENT, expected, lost_and_duplicated, master_log, messages, readings, start_site

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("with_id", [True, False], ids=["with-id", "without-id"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_agent_restart_is_the_same_node_and_delivers_every_reading_once(
    daemons: Daemons,
    mosquitto: tuple[str, int],
    sensors: Sensors,
    tmp_path: Path,
    sig: signal.Signals,
    with_id: bool,
) -> None:
    site = start_site(daemons, mosquitto, tmp_path, with_id=with_id)
    ident = site.agent_id()
    if not with_id:
        assert ident.startswith("agent-"), ident  # generated, kept in the workdir
    rows = readings(40)  # 120 readings
    sensors.publish(messages(rows[:60]))
    site.appended(60, "the first readings acknowledged into the ingest log")

    code = site.stop_agent(sig)
    gone_at = time.monotonic()
    if sig == signal.SIGTERM:
        assert code == 0, f"the agent stopped with {code} on SIGTERM"
    wait_for(
        lambda: (n := site.node()) is not None and not n["online"],
        20,
        "the master to see the agent offline",
    )
    detect_s = time.monotonic() - gone_at
    sensors.publish(messages(rows[60:]))  # the broker keeps them for the agent's session

    site.start_agent()
    back_at = time.monotonic()
    assert site.agent_id() == ident
    want = expected(rows)
    assert len(want) == 3  # 3 closed windows of the site (the 4th stays open), 30 readings each
    wait_for(lambda: site.windows() == want, 120, "every closed window, each reading counted once")
    recover_s = time.monotonic() - back_at
    wait_for(
        lambda: (n := site.node()) is not None and n["online"] and n["backlog_batches"] == 0,
        60,
        "the uplink confirmed and the agent's backlog drained",
    )
    assert site.windows() == want  # nothing came twice while the backlog drained

    wait_for(
        lambda: (
            [
                (n["id"], n["online"], n["health"], n["reasons"], n["containers"])
                for n in site.agents()
            ]
            == [(ident, True, "ok", [], ["iot/0"])]
        ),
        30,
        "the agent listed once, online, health ok, running its edge subgraph",
    )
    assert "Task was destroyed but it is pending" not in master_log(daemons)
    lost, dup = lost_and_duplicated(want, site.windows())
    assert (lost, dup) == (0, 0)
    record(
        f"agent {sig.name} restart, {'with' if with_id else 'without'} --id",
        detect_s=round(detect_s, 2),
        recover_s=round(recover_s, 2),
        readings=len(rows),
        lost=lost,
        duplicated=dup,
    )


def test_worker_restart_without_id_is_the_same_node_and_gets_its_containers_back(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    site = start_site(daemons, mosquitto, tmp_path, worker_id=False)
    ident = (daemons.tmp / "w1" / "node-id").read_text().strip()
    assert ident.startswith("worker-")

    def workers() -> list[tuple[str, bool, str, list[str]]]:
        return [
            (n["id"], n["online"], n["health"], n["containers"])
            for n in daemons.api("/api/v1/nodes")
            if n["kind"] == "worker"
        ]

    wait_for(lambda: workers() == [(ident, True, "ok", ["iot/0"])], 30, "the worker running iot")
    rows = readings(40)
    sensors.publish(messages(rows[:60]))
    site.worker.kill()
    site.worker.wait(30)
    gone_at = time.monotonic()
    wait_for(lambda: workers()[0][1] is False, 20, "the master to see the worker offline")
    detect_s = time.monotonic() - gone_at
    sensors.publish(messages(rows[60:]))
    site.start_worker()
    back_at = time.monotonic()
    want = expected(rows)
    wait_for(lambda: site.windows() == want, 120, "every closed window, each reading once")
    recover_s = time.monotonic() - back_at
    wait_for(
        lambda: workers() == [(ident, True, "ok", ["iot/0"])],
        30,
        "the worker listed once, online, running its container again",
    )
    wait_for(
        lambda: (n := site.node()) is not None and n["backlog_batches"] == 0,
        60,
        "the agent's backlog confirmed",
    )
    lost, dup = lost_and_duplicated(want, site.windows())
    assert (lost, dup) == (0, 0)
    assert "Task was destroyed but it is pending" not in master_log(daemons)
    record(
        "worker SIGKILL restart, without --id",
        detect_s=round(detect_s, 2),
        recover_s=round(recover_s, 2),
        readings=len(rows),
        lost=lost,
        duplicated=dup,
    )


def test_an_agent_whose_id_changed_delivers_every_reading_once(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    """An agent upgraded from process-id ids (or given another ``--id``) with the same workdir:
    the cloud knows nothing under its new id, yet its outbox confirmed batches under the old
    one. It delivers the rest exactly once; the old id, offline, can be forgotten."""
    site = start_site(daemons, mosquitto, tmp_path)  # --id gw-site0: the id it had
    rows = readings(40)
    sensors.publish(messages(rows[:60]))
    wait_for(
        lambda: (
            (n := site.node()) is not None
            and n["uplinks"].get("iot", {}).get("uplink_confirmed", 0) > 0
        ),
        60,
        "the first readings sent and confirmed under the old id",
    )
    # more just before the stop, so that the ingest log is not wholly trimmed (a restart
    # after a whole trim is finding 2 of issue 13, not this test's)
    sensors.publish(messages(rows[60:75]))
    site.appended(75, "the last readings before the stop acknowledged")
    site.stop_agent(signal.SIGTERM)
    site.with_id = False  # its next start generates an id and keeps it
    site.start_agent()
    back_at = time.monotonic()
    kept = daemons.tmp / AGENT / "node-id"
    new = str(wait_for(lambda: kept.exists() and kept.read_text().strip(), 30, "its id"))
    assert new != AGENT and new.startswith("agent-")
    # a new MQTT session too (its client id follows --id): publish once it is subscribed
    wait_for(
        lambda: (
            (n := site.node()) is not None
            and n["online"]
            and n["metrics"].get("mqtt_connected") == 1.0
        ),
        30,
        "the agent under its new id",
    )
    sensors.publish(messages(rows[75:]))
    want = expected(rows)
    wait_for(lambda: site.windows() == want, 120, "every closed window, each reading once")
    recover_s = time.monotonic() - back_at
    wait_for(
        lambda: (n := site.node()) is not None and n["backlog_batches"] == 0,
        60,
        "its backlog confirmed under the new id",
    )
    assert site.windows() == want
    assert daemons.cli("nodes", "--forget", AGENT).strip() == f"forgot node {AGENT!r}"
    # listed once, and degraded: it went on after the cloud's last batch, which an id change
    # explains but a cloud that lost confirmed batches would too, so it says so
    wait_for(
        lambda: (
            [(n["id"], n["online"], n["health"]) for n in site.agents()]
            == [(new, True, "degraded")]
        ),
        30,
        "the agent listed once, under its id",
    )
    (reason,) = next(n for n in site.agents() if n["id"] == new)["reasons"]
    assert reason.startswith("uplink: the cloud held less than it had confirmed: an id changed")
    lost, dup = lost_and_duplicated(want, site.windows())
    assert (lost, dup) == (0, 0)
    record(
        "agent id changed (upgrade from process-id ids)",
        detect_s=None,
        recover_s=round(recover_s, 2),
        readings=len(rows),
        lost=lost,
        duplicated=dup,
    )
