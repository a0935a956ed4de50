"""Running a topology's code as an unprivileged user of its own: ``RunAs``.

A node started as root gives each topology a user id of its own
(``common/node/_users.py``) and starts that topology's containers with
``--run-as UID:GID:HOME``. The container process keeps the node's identity
(its stream manager speaks mutual TLS with the node's certificate) and so
never runs the topology's code: it learns the topology's shape from a child
process that loads the file as that user (``load_isolated``), and starts each
instance as that user (``RunAs.preexec``), with no supplementary groups, a
private umask, ``HOME`` and ``TMPDIR`` in the topology's own folder, and none
of the node's secrets in its environment (``SECRET_ENV``). So a topology's code
cannot read the node's key (mode 0600, the node's), write a package (sealed,
the node's) or signal another topology's processes (another user).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from dataclasses import dataclass

_PR_SET_NO_NEW_PRIVS = 38


# loaded here, not between fork and exec (a dlopen there can deadlock a threaded parent)
_LIBC = ctypes.CDLL(None, use_errno=True)  # the C library loaded (no `ldconfig -p` child)


SECRET_ENV = ("HEADWATER_TOKEN", "HEADWATER_MQTT_PASSWORD", "HEADWATER_JOIN")
"""What a node's environment may hold that its topologies' code must not see."""


@dataclass(frozen=True)
class RunAs:
    """The user a topology's code runs as, and its own folder (its ``HOME``)."""

    uid: int
    gid: int
    home: str
    groups: tuple[str, ...] = ()
    """``cgroup.procs`` files its processes enter first (its topology's control groups, where
    the node made them; a container's are its own already)."""

    def arg(self) -> str:
        """As the container's ``--run-as`` takes it."""
        return f"{self.uid}:{self.gid}:{self.home}"

    @classmethod
    def parse(cls, text: str) -> RunAs:
        """From ``UID:GID:HOME``; ValueError for anything else."""
        uid, gid, home = text.split(":", 2)
        if not home.startswith("/"):
            raise ValueError(f"--run-as needs an absolute HOME, got {home!r}")
        return cls(int(uid), int(gid), home)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` as the topology's code gets it: its own home, none of the node's secrets."""
        kept = {k: v for k, v in env.items() if k not in SECRET_ENV}
        kept.update(HOME=self.home, TMPDIR=self.home, USER=f"hw{self.uid}", LOGNAME=f"hw{self.uid}")
        return kept

    def preexec(self) -> None:
        """Become this user (between fork and exec, as root): enter its control groups, then
        drop the supplementary groups, then the group, then the user."""
        enter_groups(self.groups)
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)
        os.umask(0o077)
        _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # no set-user-id program gains it back


def enter_groups(procs: tuple[str, ...]) -> None:
    """Move this process into the control groups whose ``cgroup.procs`` files are ``procs``
    (between fork and exec: before it runs anything of a topology's)."""
    for path in procs:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, b"0")  # "0": the writing process itself
        finally:
            os.close(fd)
