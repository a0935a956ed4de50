"""A topology's control groups on a node belong to that node alone (real cgroups, as root).

Two nodes of one id on a host (two clusters' ``w1``, or two test runs at once) once made
the same ``headwater-w1/t-TOPOLOGY`` groups: the topology stopping on one killed the other's
containers of that topology (SIGKILL, ``exited with -9``) and removed the group, so that
each of its restarts then failed ("Exception occurred in preexec_fn"): its pipeline stood
still for good.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from headwater.common.node._limits import DEFAULT_LIMITS, TopologyGroups
from headwater.common.runtime._procs import spawn

SLEEP = ["-c", "import time; time.sleep(60)"]


def _groups(home: Path) -> TopologyGroups:
    groups = TopologyGroups("w1", DEFAULT_LIMITS, home)
    if not groups.enabled:
        pytest.skip("this machine lets no control groups be made here (not root)")
    return groups


def test_a_node_of_the_same_id_elsewhere_neither_kills_nor_removes_its_groups(
    tmp_path: Path,
) -> None:
    ours, theirs = _groups(tmp_path / "a"), _groups(tmp_path / "b")
    procs = []
    try:
        assert set(ours.groups("loadstep")).isdisjoint(theirs.groups("loadstep"))
        procs.append(spawn(SLEEP, preexec=ours.joiner("loadstep")))
        procs.append(spawn(SLEEP, preexec=theirs.joiner("loadstep")))
        theirs.remove("loadstep")  # the topology stops there: what is left in its group dies
        assert procs[1].wait(10) == -signal.SIGKILL
        assert procs[0].poll() is None  # ours runs on

        # a group removed from outside is made again for the next start in it
        procs[0].kill()
        procs[0].wait(10)
        for group in ours.groups("loadstep"):
            group.rmdir()
        procs.append(spawn(SLEEP, preexec=ours.joiner("loadstep")))
        assert procs[2].poll() is None
        assert all(g.is_dir() for g in ours.groups("loadstep"))
    finally:
        for p in procs:
            p.kill()
            p.wait(10)
        ours.close()
        theirs.close()
