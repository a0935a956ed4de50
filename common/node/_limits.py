"""Per-topology limits on a node: memory, CPU and processes, one control group per topology.

A node starts each container of a topology in that topology's control group,
made under the node's own (``/proc/self/cgroup``) as ``headwater-NODE-HOME/t-TOPOLOGY``
in each controller it may write (HOME: a hash of the node's workdir, which one node at a time
holds, so that two nodes of one id on a host, of two clusters, never share a group: one's
topology stopping killed the other's processes of the same topology name, and removed the
group its restarts entered): ``memory`` (``memory.limit_in_bytes``, or
``memory.max`` under cgroup v2), ``cpu`` (a CFS quota of ``cpus`` cores, none by
default) and ``pids`` (``pids.max``: processes and threads). A container's
instances are its children, so they stay in its group: the limits bound the
topology as a whole on this node, and one topology cannot starve the node or
its neighbours of memory or processes. When the topology stops here, whatever
is left in its group (a process it started in a session of its own) is killed
and the group removed (when the node stops too). A group removed from outside (by hand) is
made again at the next start of a container in it, never left for every restart to fail.

Where the node cannot make control groups (not root, a read-only
``/sys/fs/cgroup``), it says so once and runs its containers without these
limits (docs/security.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from .._sandbox import enter_groups

log = logging.getLogger("headwater.node")
CGROUP_ROOT = Path("/sys/fs/cgroup")
_CFS_PERIOD_US = 100_000
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class TopologyLimits:
    """What one topology's containers on a node may use together."""

    memory_bytes: int = 4 << 30
    """Memory (resident and page cache), 4 GiB by default; past it the kernel reclaims,
    then kills a process of that topology, never of another."""
    cpus: float = 0.0
    """CPU time, in cores (a CFS quota); 0, the default: no cap, shares equal."""
    processes: int = 1024
    """Processes and threads together (every instance has a few threads)."""


DEFAULT_LIMITS = TopologyLimits()


class TopologyGroups:
    """The node's per-topology control groups: made on first use, removed when done."""

    def __init__(
        self, node_id: str, limits: TopologyLimits, home: Path, root: Path = CGROUP_ROOT
    ) -> None:
        """``home``: the node's workdir (locked by it: no other live node has it)."""
        self.limits = limits
        self._node = f"headwater-{_SAFE.sub('-', node_id)}-{home_tag(home)}"
        self._bases = _writable_bases(root)
        self._made: dict[str, list[Path]] = {}
        if not self._bases:
            log.warning(
                "no per-topology limits on this node: it cannot make control groups under %s "
                "(run it as root, with the memory, cpu and pids controllers writable)",
                root,
            )

    @property
    def enabled(self) -> bool:
        return bool(self._bases)

    def groups(self, topology: str) -> list[Path]:
        """The folders of ``topology``'s groups, made (with their limits) on first use."""
        made = self._made.get(topology)
        if made is not None and all(g.is_dir() for g in made):
            return made
        if made is not None:
            log.warning("the control groups of %r were removed from outside: made again", topology)
        made = []
        for controller, base in self._bases.items():
            # "t-": never one of the controller's own files (a topology named "tasks")
            group = base / self._node / ("t-" + _SAFE.sub("-", topology))
            try:
                group.mkdir(parents=True, exist_ok=True)
                self._set_limits(controller, group)
            except OSError as exc:
                log.warning("no %s limit for %r: %s", controller, topology, exc)
                continue
            made.append(group)
        self._made[topology] = made
        return made

    def _set_limits(self, controller: str, group: Path) -> None:
        lim = self.limits
        v2 = controller == "unified"
        if controller in ("memory", "unified"):
            name = "memory.max" if v2 else "memory.limit_in_bytes"
            (group / name).write_text(str(lim.memory_bytes))
        if controller in ("cpu", "unified") and lim.cpus > 0:
            quota = max(1000, round(lim.cpus * _CFS_PERIOD_US))
            if v2:
                (group / "cpu.max").write_text(f"{quota} {_CFS_PERIOD_US}")
            else:
                (group / "cpu.cfs_period_us").write_text(str(_CFS_PERIOD_US))
                (group / "cpu.cfs_quota_us").write_text(str(quota))
        if controller in ("pids", "unified"):
            (group / "pids.max").write_text(str(lim.processes))

    def joiner(self, topology: str) -> _Join:
        """What a container's process runs between fork and exec to enter ``topology``'s groups."""
        return _Join(tuple(str(g / "cgroup.procs") for g in self.groups(topology)))

    def remove(self, topology: str) -> None:
        """Kill what is left in ``topology``'s groups (a process it left behind, in a session
        of its own), then remove them; one that cannot go yet is tried again next time."""
        left = []
        for group in self._made.pop(topology, []):
            _kill_all(group)
            try:
                group.rmdir()
            except OSError as exc:  # a process still dying: the next stop or close tries again
                log.debug("cannot remove %s yet: %s", group, exc)
                left.append(group)
        if left:
            self._made[topology] = left

    def close(self) -> None:
        """Remove every group made here, and the node's own folders if empty."""
        for topology in list(self._made):
            self.remove(topology)
        for base in self._bases.values():
            with contextlib.suppress(OSError):  # another of this node's groups is left
                (base / self._node).rmdir()


def home_tag(home: Path) -> str:
    """What tells the groups of the node with workdir ``home`` from those of another node of
    the same id on this host: a hash of the folder (8 hex digits)."""
    return hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:8]


@dataclass(frozen=True)
class _Join:
    procs: tuple[str, ...]

    def __call__(self) -> None:
        enter_groups(self.procs)


def _kill_all(group: Path, wait_s: float = 5.0) -> None:
    """SIGKILL every process in ``group`` until it is empty (or ``wait_s`` has passed)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _writable_bases(root: Path) -> dict[str, Path]:
    """Per controller, this process's own group folder where it may make groups."""
    bases: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return bases
    v2 = (root / "cgroup.controllers").exists()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if v2 and controllers == "":
            wanted = ["unified"]
        else:
            wanted = [c for c in controllers.split(",") if c in ("memory", "cpu", "pids")]
        for controller in wanted:
            folder = root if controller == "unified" else root / controller
            base = folder / path.lstrip("/")
            if base.is_dir() and os.access(base, os.W_OK):
                bases[controller] = base
    return bases
