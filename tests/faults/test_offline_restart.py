"""Fault: the agent's link to the cloud is cut, and the agent is rebooted (SIGKILL) during the
outage, started by its workdir alone (no ``--id``, as the systemd unit runs it).

From its own disk, before it can reach the master, the agent resumes its edge subgraph: it
processes and checkpoints what it ingests, trims its ingest log, and its ``/status`` shows
the subgraph running and its real backlog (what the outbox on disk holds). When the link is
back every reading reaches the cloud exactly once. An order whose package is gone from the
workdir cannot be resumed: the agent says so in its health until the master sends it.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from headwater._demo.linkproxy import LinkProxy
from headwater.edge._outbox import Outbox

from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ..integration.test_edge_cloud import Sensors, _steady
from ._report import record
from ._site import (
    AGENT,
    expected,
    lost_and_duplicated,
    master_log,
    messages,
    readings,
    start_site,
)

pytestmark = pytest.mark.cluster


def _outbox_batches(workdir: Path) -> int:
    """Unconfirmed batches in the agent's outboxes on disk (read while the agent is down)."""
    total = 0
    for d in sorted((workdir / "iot" / "container-0" / "outbox").iterdir()):
        box = Outbox(d, 1 << 30)
        try:
            total += box.backlog
        finally:
            box.close()
    return total


def test_agent_rebooted_during_an_outage_resumes_from_its_own_disk(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    daemons.start_master()
    proxy = LinkProxy(daemons.grpc)
    try:
        site = start_site(daemons, mosquitto, tmp_path, master=proxy.address, with_id=False)
        workdir = daemons.tmp / AGENT
        rows = readings(40)  # 120 readings
        sensors.publish(messages(rows[:30]))
        wait_for(
            lambda: (
                (n := site.node()) is not None
                and n["metrics"]["mqtt_appended"] >= 30
                and n["backlog_batches"] == 0
                and n["metrics"]["ingest_trimmed"] >= 30
            ),
            60,
            "the first readings through, confirmed and trimmed",
        )
        revision = site.status()["revisions"]["iot"]

        proxy.cut()
        cut_at = time.monotonic()
        wait_for(
            lambda: (n := site.node()) is not None and not n["online"],
            20,
            "the master to see the agent offline",
        )
        detect_s = time.monotonic() - cut_at
        sensors.publish(messages(rows[30:75]))
        wait_for(
            lambda: (
                site.status()["backlog_batches"] > 0
                and site.status()["metrics"]["mqtt_appended"] >= 75
            ),
            30,
            "readings acknowledged and batches in the outbox while cut",
        )

        site.stop_agent()  # SIGKILL, a reboot: its containers and instances die with it
        before = _outbox_batches(workdir)
        assert before > 0
        sensors.publish(messages(rows[75:]))  # the broker keeps them for the agent's session

        site.start_agent()  # the link is still cut: the master is out of reach
        first = wait_for(
            lambda: (s := site.status())["backlog_batches"] != -1 and s,
            30,
            "the restarted agent's /status",
        )
        assert first["backlog_batches"] >= before  # from its first answer on, never 0
        wait_for(
            lambda: (
                (s := site.status()).get("topologies") == {"iot": "RUNNING"}
                and s["revisions"] == {"iot": revision}
                and s["containers"] == ["iot/0"]
                and not s["attached"]
            ),
            30,
            "the edge subgraph resumed from the agent's disk, offline",
        )

        def settled() -> tuple[Any, ...]:
            s = site.status()
            m = s["metrics"]
            return (s["backlog_batches"], m.get("mqtt_appended"), m.get("ingest_trimmed"))

        wait_for(
            lambda: site.status()["metrics"].get("mqtt_appended", 0) >= 45,
            30,
            "the readings the broker kept, ingested after the reboot",
        )
        backlog, appended, trimmed = _steady(settled, 8.0, timeout=90)
        # processed and checkpointed offline: the outbox grew, the ingest log was trimmed
        assert backlog > before, (backlog, before)
        assert trimmed >= appended > 0, (trimmed, appended)
        status = site.status()  # degraded only by the cut link itself
        assert status["health"] == "degraded", status
        assert [r.split(" unreachable")[0] for r in status["reasons"]] == [
            f"master: master {proxy.address}"
        ], status

        assert site.stop_agent(signal.SIGTERM) == 0  # its backlog is what its outbox holds
        assert _outbox_batches(workdir) == backlog

        site.start_agent()
        wait_for(
            lambda: site.status()["backlog_batches"] == backlog,
            30,
            "the real backlog reported again after a restart, still offline",
        )
        proxy.restore()
        back_at = time.monotonic()
        want = expected(rows)
        wait_for(
            lambda: site.windows() == want, 120, "every closed window, each reading counted once"
        )
        recover_s = time.monotonic() - back_at
        wait_for(
            lambda: (
                [(n["id"], n["online"], n["health"], n["backlog_batches"]) for n in site.agents()]
                == [(site.agent_id(), True, "ok", 0)]
            ),
            60,
            "the agent listed once, online, ok, its backlog confirmed",
        )
        assert site.windows() == want
        assert "Task was destroyed but it is pending" not in master_log(daemons)
        lost, dup = lost_and_duplicated(want, site.windows())
        assert (lost, dup) == (0, 0)
        record(
            "agent rebooted during an outage (link cut)",
            detect_s=round(detect_s, 2),
            recover_s=round(recover_s, 2),
            readings=len(rows),
            lost=lost,
            duplicated=dup,
        )
    finally:
        proxy.close()


def test_an_order_whose_package_is_gone_is_not_resumed_and_says_so(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    daemons.start_master()
    proxy = LinkProxy(daemons.grpc)
    try:
        site = start_site(daemons, mosquitto, tmp_path, master=proxy.address, with_id=False)
        workdir = daemons.tmp / AGENT
        rows = readings(20)  # 60 readings
        proxy.cut()
        sensors.publish(messages(rows[:30]))
        wait_for(
            lambda: (
                site.status()["backlog_batches"] > 0
                and site.status()["metrics"]["mqtt_appended"] >= 30
            ),
            30,
            "readings acknowledged and batches in the outbox while cut",
        )
        site.stop_agent()
        before = _outbox_batches(workdir)
        (zipped,) = (workdir / "packages").glob("*.zip")
        zipped.unlink()
        site.start_agent()
        detect_at = time.monotonic()
        status = wait_for(
            lambda: (
                (s := site.status()).get("health") == "degraded"
                and any(r.startswith("orders:iot") for r in s["reasons"])
                and s
            ),
            30,
            "the agent degraded: an order it cannot resume",
        )
        detect_s = time.monotonic() - detect_at
        assert status["topologies"] == {} and status["containers"] == []
        (reason,) = [r for r in status["reasons"] if not r.startswith("master: ")]
        assert reason.startswith("orders:iot: cannot resume 'iot' from disk: its package sha256:")
        assert "waiting for the master to send it" in reason
        assert status["backlog_batches"] == before > 0  # what its outbox on disk holds

        proxy.restore()  # the master's order fetches the package again
        back_at = time.monotonic()
        wait_for(
            lambda: (
                (s := site.status()).get("topologies") == {"iot": "RUNNING"}
                and s["health"] == "ok"
                and s["containers"] == ["iot/0"]
            ),
            60,
            "the edge subgraph running once the master sent the package",
        )
        recover_s = time.monotonic() - back_at
        sensors.publish(messages(rows[30:]))
        want = expected(rows)
        wait_for(lambda: site.windows() == want, 90, "every closed window, each reading once")
        lost, dup = lost_and_duplicated(want, site.windows())
        record(
            "agent restarted offline without its package",
            detect_s=round(detect_s, 2),
            recover_s=round(recover_s, 2),
            readings=len(rows),
            lost=lost,
            duplicated=dup,
        )
    finally:
        proxy.close()


def test_a_deactivated_subgraph_stays_paused_after_a_reboot_offline(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    daemons.start_master()
    proxy = LinkProxy(daemons.grpc)
    try:
        site = start_site(daemons, mosquitto, tmp_path, master=proxy.address)
        daemons.cli("deactivate", "iot")
        wait_for(
            lambda: site.status().get("topologies") == {"iot": "PAUSED"},
            20,
            "the edge subgraph paused",
        )
        proxy.cut()
        site.stop_agent()
        site.start_agent()
        wait_for(
            lambda: (
                (s := site.status()).get("topologies") == {"iot": "PAUSED"}
                and s["containers"] == ["iot/0"]
            ),
            30,
            "the edge subgraph resumed from disk, still paused",
        )
        rows = readings(20)
        sensors.publish(messages(rows))
        wait_for(
            lambda: site.status()["metrics"].get("mqtt_appended", 0) >= len(rows),
            30,
            "the readings ingested while paused",
        )
        assert _steady(lambda: site.status()["backlog_batches"], 3.0) == 0  # nothing processed

        proxy.restore()
        daemons.cli("activate", "iot")
        back_at = time.monotonic()
        want = expected(rows)
        wait_for(lambda: site.windows() == want, 90, "every closed window, each reading once")
        lost, dup = lost_and_duplicated(want, site.windows())
        record(
            "deactivated agent rebooted during an outage",
            detect_s=None,
            recover_s=round(time.monotonic() - back_at, 2),
            readings=len(rows),
            lost=lost,
            duplicated=dup,
        )
    finally:
        proxy.close()
