"""Disk full and workdir deleted under a running agent, and an agent started on a full disk.

Before the fix the ingest writer thread died with ENOSPC while the agent reported online and
ok, checkpoints stopped for good, and a restart crashed opening RocksDB; with the workdir
deleted, MQTT acknowledgement went on into files no one could see.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from .._wait import wait_for
from ..integration._daemons import Daemons
from ..integration.test_edge_cloud import _steady
from . import _report
from ._disk import fill, free, small_disk
from ._edge import Site, publish, readings

pytestmark = pytest.mark.cluster


def test_disk_full_stops_acknowledgement_and_recovers_with_every_reading_once(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk", 96) as disk:
        site = Site(daemons, mosquitto, tmp_path)
        site.workdir = disk / "gw-site0"
        site.start()
        everything = readings(60)
        a, b, c = everything[:60], everything[60:120], everything[120:]
        publish(mosquitto, a)
        wait_for(lambda: site.metric("mqtt_appended") == len(a), 30, "the first readings acked")

        # the disk fills: ingest fails visibly, acknowledgement stops, the broker keeps the rest
        filler = fill(disk)
        filled = time.monotonic()
        publish(mosquitto, b)
        reason = wait_for(
            lambda: site.reason("ingest: disk full on"),
            30,
            "ingest failed, disk full, at the agent and the master",
        )
        detect_s = time.monotonic() - filled
        assert str(site.workdir) in reason and "No space left on device" in reason, reason
        assert site.status()["health"] == "failed"
        # the edge checkpoints cannot be saved either, and say so
        wait_for(
            lambda: site.reason("checkpoints:iot: cannot save", where="agent"),
            30,
            "checkpoints failing, at the agent",
        )
        held = _steady(lambda: site.metric("mqtt_appended"), 2.0)
        assert held < len(a) + len(b)

        free(filler)
        freed = time.monotonic()
        wait_for(
            lambda: site.metric("mqtt_appended") == len(a) + len(b),
            60,
            "the held readings acked once space is back",
        )
        wait_for(lambda: site.status()["health"] == "ok", 30, "the agent ok again")
        site.wait_all(a + b)
        recover_s = time.monotonic() - freed

        # an agent started on a full disk: it runs, says why it cannot ingest, and goes on
        site.stop_agent()
        filler = fill(disk)
        site.start_agent()
        wait_for(
            lambda: site.reason("ingest: disk full on", where="agent"),
            30,
            "the agent started on a full disk and failed with the reason",
        )
        publish(mosquitto, c)
        wait_for(lambda: site.metric("mqtt_received") > 0, 30, "readings reaching the agent")
        assert site.agent.is_running()
        assert site.metric("mqtt_appended") <= 0  # received, none on the full disk
        free(filler)
        wait_for(lambda: site.metric("mqtt_appended") == len(c), 60, "the readings acked")
        site.wait_all(everything)
        wait_for(lambda: site.status()["health"] == "ok", 30, "the agent ok again")
        site.stop_agent()
    _report.record(
        "disk full under the agent's workdir",
        detect_s=round(detect_s, 1),
        recover_s=round(recover_s, 1),
        **site.lost_and_duplicated(everything),
    )


def _removed(path: Path) -> bool:
    """One ``rm -rf`` of ``path`` while the agent writes in it: a file the agent renames or adds
    meanwhile is no error here, the next try takes what it left."""
    shutil.rmtree(path, onerror=lambda *_: None)
    return not path.exists()


def test_workdir_deleted_is_a_visible_failure_and_nothing_acked_is_lost(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    site = Site(daemons, mosquitto, tmp_path)
    site.start()
    everything = readings(40)
    a, b = everything[:60], everything[60:]
    publish(mosquitto, a)
    wait_for(lambda: site.metric("mqtt_appended") == len(a), 30, "the first readings in")
    wait_for(lambda: _removed(site.workdir), 10, "the workdir deleted")
    deleted = time.monotonic()
    publish(mosquitto, b)
    reason = wait_for(lambda: site.reason("is gone"), 30, "the agent failed: its workdir is gone")
    detect_s = time.monotonic() - deleted
    assert reason.startswith(f"ingest: workdir {site.workdir} is gone"), reason
    assert site.status()["health"] == "failed"
    # nothing more is acknowledged: the broker keeps every later reading for the session
    assert _steady(lambda: site.metric("mqtt_appended"), 2.0) < len(a) + len(b)
    # restarted on a fresh workdir, the agent gets them all from the broker, each once
    site.stop_agent()
    restarted = time.monotonic()
    site.start_agent()
    wait_for(
        lambda: site.metric("mqtt_appended") == len(b),
        30,
        "every reading published after the deletion, from the broker",
    )
    taken = int(_steady(lambda: site.metric("mqtt_appended"), 2.0))
    assert taken == len(b)
    assert site.status()["health"] == "ok", site.status()["reasons"]
    _report.record(
        "agent workdir deleted while running",
        detect_s=round(detect_s, 1),
        recover_s=round(time.monotonic() - restarted, 1),
        readings=len(b),
        lost=max(0, len(b) - taken),
        duplicated=max(0, taken - len(b)),
    )
