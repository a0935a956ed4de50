"""Restart after an idle spell: retention has trimmed the whole ingest log.

Before the fix the log reopened with its end at 0 while the log spout's checkpointed offset
was ahead: new readings got offsets below it and were trimmed unread (acknowledged to the
broker, never at the cloud).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ..integration._daemons import Daemons
from ..integration._support import wait_for
from . import _report
from ._edge import Site, publish, readings

pytestmark = pytest.mark.cluster


def test_restart_after_retention_trimmed_everything_loses_nothing(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    site = Site(daemons, mosquitto, tmp_path)
    site.start()
    everything = readings(40)
    first, then = everything[:60], everything[60:]  # 20 s of readings, then 20 s more
    publish(mosquitto, first)
    wait_for(lambda: site.metric("mqtt_appended") == len(first), 30, "the first readings appended")
    # idle until retention has trimmed every record the edge checkpoints have passed
    wait_for(
        lambda: site.metric("ingest_trimmed") == len(first), 60, "the whole ingest log trimmed"
    )
    site.stop_agent()
    restarted = time.monotonic()
    site.start_agent()
    site.wait_flowing()
    publish(mosquitto, then)
    wait_for(lambda: site.metric("mqtt_appended") == len(then), 30, "the new readings appended")
    site.wait_all(everything)
    assert site.status()["health"] == "ok", site.status()["reasons"]
    _report.record(
        "agent restart after retention trimmed its whole ingest log",
        detect_s=None,
        recover_s=round(time.monotonic() - restarted, 1),
        **site.lost_and_duplicated(everything),
    )
