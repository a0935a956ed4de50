"""Each topology's own user on a node, where the node can give it one.

A node started as root runs each topology's code as a user of that topology's
own (``RunAs``, ``common/_sandbox.py``): a user id from systemd's range for
dynamic users (61184-65519), with no name, no groups and a group id of the same
number, given once per node workdir and topology and kept in a host-wide
registry (``/var/lib/headwater/users.json``, root's alone), so two nodes on one
host never hand one id to two topologies. Its ``HOME`` is
``WORKDIR/TOPOLOGY/home`` (its own, 0700); the node's workdir is made
traversable (0711) but not listable, so the code finds its packages (sealed,
the node's) and its container's socket (its user's alone), and nothing else.

``--isolation`` says what the node does: ``user`` requires it (a node that
cannot refuses to start, saying why); ``auto`` (the default) does it where the
node can and otherwise says once, in its log, that topology code runs as the
node's own user and why; ``none`` never does (``headwater demo``'s nodes, and
tests that let topologies write to the test's folders). The node can when it
runs as root and a probe process, as a topology user, can run this Python,
import headwater and reach the workdir.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import pwd
import subprocess
import sys
from pathlib import Path

from .._exceptions import HeadwaterError
from .._sandbox import RunAs

log = logging.getLogger("headwater.node")
FIRST_UID, LAST_UID = 61184, 65519
"""systemd's range for dynamic users; the first is the probe's."""
REGISTRY = Path("/var/lib/headwater/users.json")
REGISTRY_ENV = "HEADWATER_USERS_REGISTRY"
"""Where the registry is, where not the default (tests)."""
MODES = ("auto", "user", "none")
_PROBE = "import os, sys, headwater.common.runtime.instance; os.stat(sys.argv[1]); print('ok')"


class TopologyUsers:
    """The users this node's topologies run as (``run_as``), or none where it cannot."""

    def __init__(self, workdir: Path, mode: str = "auto") -> None:
        if mode not in MODES:
            raise HeadwaterError(f"--isolation is one of {', '.join(MODES)}, not {mode!r}")
        self.workdir = workdir.resolve()
        self.mode = mode
        self.registry = Path(os.environ.get(REGISTRY_ENV) or REGISTRY)
        self._why_not: str | None = None
        self._checked = False

    def check(self) -> None:
        """Find out (once) whether this node can: as its daemon starts, after its ports.

        Raises HeadwaterError for ``--isolation user`` on a node that cannot."""
        if self._checked:
            return
        self._why_not = "--isolation none" if self.mode == "none" else self._problem()
        self._checked = True
        if self._why_not is not None and self.mode == "user":
            raise HeadwaterError(f"--isolation user, but this node cannot: {self._why_not}")
        if self._why_not is not None and self.mode == "auto":
            log.warning(
                "topology code runs as this node's own user (uid %d): %s "
                "(docs/security.md, 'Topology code on a node')",
                os.geteuid(),
                self._why_not,
            )

    @property
    def why_not(self) -> str | None:
        self.check()
        return self._why_not

    @property
    def enabled(self) -> bool:
        return self.why_not is None

    def run_as(self, topology: str) -> RunAs | None:
        """The user ``topology``'s code runs as here, its home made; None: this node's own."""
        if not self.enabled:
            return None
        uid = self._allocate(topology)
        home = self.workdir / topology / "home"
        home.mkdir(parents=True, exist_ok=True)
        os.chmod(self.workdir / topology, 0o711)
        os.chown(home, uid, uid)
        os.chmod(home, 0o700)
        return RunAs(uid, uid, str(home))

    def _problem(self) -> str | None:
        """Why this node cannot run code as other users, or None if it can."""
        if os.geteuid() != 0:
            return "it does not run as root, so it cannot change user"
        self.workdir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.workdir, 0o711)  # others may pass through, not list
        probe = RunAs(FIRST_UID, FIRST_UID, "/")
        try:
            done = subprocess.run(
                [sys.executable, "-c", _PROBE, str(self.workdir)],
                env=probe.env({**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}),
                preexec_fn=probe.preexec,
                cwd="/",
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"a process as another user could not start: {exc}"
        if done.returncode == 0:
            return None
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return (
            f"a process as another user cannot run {sys.executable} with headwater and reach "
            f"{self.workdir} ({last}): install headwater where every user can read it and "
            "give the node a workdir that other users can pass through (e.g. /var/lib)"
        )

    def _allocate(self, topology: str) -> int:
        key = f"{self.workdir}:{topology}"
        self.registry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.registry.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                given: dict[str, int] = json.loads(self.registry.read_text())
            except FileNotFoundError:
                given = {}
            uid = given.get(key)
            if uid is None:
                uid = _free_uid(set(given.values()))
                given[key] = uid
                tmp = self.registry.with_suffix(".tmp")
                tmp.write_text(json.dumps(given, indent=1, sort_keys=True))
                tmp.chmod(0o600)
                tmp.replace(self.registry)
                log.info("topology %r runs as user id %d on this node", topology, uid)
            return uid
        finally:
            os.close(fd)


def _free_uid(taken: set[int]) -> int:
    for uid in range(FIRST_UID + 1, LAST_UID + 1):
        if uid in taken:
            continue
        try:
            pwd.getpwuid(uid)  # an account of the host's: not ours to give
        except KeyError:
            return uid
    raise HeadwaterError(f"no user id left in {FIRST_UID + 1}-{LAST_UID} for another topology")
