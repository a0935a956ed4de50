"""The small footprints (``headwater agent --footprint small|single``): the IoT example's edge
subgraph in one process under the agent, or inside the agent itself, and a crash of that
process loses and duplicates nothing.

``small``: the edge container runs the stream manager and every instance on threads, so the
agent has exactly one process under it. Killing that process (what a crash of any user code
there comes to: the container exits as a whole) mid-stream: the agent restarts it, every task
restores from the last complete edge checkpoint, and every reading reaches the cloud once.
``single``: no process under the agent; killing the agent and starting it again does the same.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
import pytest

from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ..integration.test_edge_cloud import Sensors
from ._report import record
from ._site import expected, lost_and_duplicated, messages, readings, start_site

pytestmark = pytest.mark.cluster


def _under(agent: psutil.Process) -> list[psutil.Process]:
    return [p for p in agent.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize("footprint", ["small", "single"])
def test_small_footprint_runs_the_edge_in_one_process_and_a_crash_loses_nothing(
    daemons: Daemons,
    mosquitto: tuple[str, int],
    sensors: Sensors,
    tmp_path: Path,
    footprint: str,
) -> None:
    site = start_site(daemons, mosquitto, tmp_path, footprint=footprint)
    assert site.agent is not None
    rows = readings(40)  # 120 readings
    sensors.publish(messages(rows[:60]))
    site.appended(60, "the first readings acknowledged into the ingest log")
    want = expected(rows)
    if footprint == "single":  # the edge container in the agent's own process: none under it
        assert _under(site.agent) == []
        assert site.agent.num_threads() >= 2 * 3  # an executor and a gateway per instance
        site.stop_agent(signal.SIGKILL)  # a crash of the agent, with its edge subgraph
        killed_at = time.monotonic()
        sensors.publish(messages(rows[60:]))
        site.start_agent()
    else:  # the edge container alone under the agent: its stmgr and the instances inside
        (container,) = _under(site.agent)
        assert "headwater.edge.container" in container.cmdline()
        assert container.num_threads() >= 1 + 2 * 3  # an executor and a gateway per instance
        container.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        sensors.publish(messages(rows[60:]))
    wait_for(lambda: site.windows() == want, 120, "every closed window, each reading counted once")
    recover_s = time.monotonic() - killed_at
    assert site.agent is not None
    if footprint == "single":
        assert _under(site.agent) == []
    else:
        (again,) = _under(site.agent)
        assert again.pid != container.pid  # restarted by the agent, alone again
    lost, dup = lost_and_duplicated(want, site.windows())
    assert (lost, dup) == (0, 0)
    record(
        f"--footprint {footprint}: the edge container killed mid-stream",
        detect_s=None,
        recover_s=round(recover_s, 2),
        readings=len(rows),
        lost=lost,
        duplicated=dup,
    )
