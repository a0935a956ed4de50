"""Which master a node obeys: the masters it may attach to, and the leader epoch fence.

A cluster with standby masters gives its nodes every master's address
(``--master a:7070,b:7070``); only the leader listens for nodes, so a node
attaches to whichever answers, trying the next address after a failure
(``MasterAddresses``). Each election's winner takes a higher leader epoch and
stamps it on every order; a node keeps the highest epoch it has obeyed, on disk
(``LeaderEpoch``), and refuses an order stamped lower: a deposed leader that has
not noticed yet (cut off from ZooKeeper, paused) is not obeyed, also after the
node restarts. A master without standbys stamps 0, and a node that never saw a
higher epoch obeys it as before.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .._exceptions import HeadwaterError

log = logging.getLogger("headwater.node")
EPOCH_FILE = "leader-epoch"
NEXT_MASTER_S = 0.05
"""After a failed address, the pause before the next one of the same round."""


class MasterAddresses:
    """The masters' addresses, tried in turn: ``current`` until ``failed`` moves on.

    A node backs off once a round of them has failed, not after each address: with the
    leader gone and a standby about to lead, the next address is tried at once, and the
    backoff grows once per round (a failover's re-attach is not spent waiting to try a
    master known dead)."""

    def __init__(self, text: str) -> None:
        self.all = [a.strip() for a in text.split(",") if a.strip()]
        if not self.all:
            raise HeadwaterError(f"no master address in {text!r} (HOST:PORT[,HOST:PORT...])")
        self._at = 0
        self._left = len(self.all)  # addresses not yet tried since one last took the node

    def current(self) -> str:
        return self.all[self._at]

    def failed(self) -> bool:
        """The current one did not take the node: the next one is tried. Whether every
        address has failed since one last took the node (a round: then back off)."""
        self._at = (self._at + 1) % len(self.all)
        self._left -= 1
        if self._left > 0:
            return False
        self._left = len(self.all)
        return True

    def took(self) -> None:
        """The current one took the node: a new round starts at the next failure."""
        self._left = len(self.all)

    def __str__(self) -> str:
        return ",".join(self.all)


class LeaderEpoch:
    """The highest leader epoch this node obeyed, kept in ``WORKDIR/leader-epoch``."""

    def __init__(self, workdir: str | Path) -> None:
        self.path = Path(workdir) / EPOCH_FILE
        try:
            self.seen = int(self.path.read_text().strip() or 0)
        except FileNotFoundError:
            self.seen = 0
        except (OSError, ValueError) as exc:
            raise HeadwaterError(
                f"cannot read {self.path}: {exc}; it holds the highest leader epoch this node "
                "obeyed (remove it only if every master of the cluster is new)"
            ) from None

    def admit(self, epoch: int) -> bool:
        """Whether an order stamped ``epoch`` may be obeyed; a higher epoch is kept (synced)
        before it is."""
        if epoch < self.seen:
            return False
        if epoch > self.seen:
            tmp = self.path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            with os.fdopen(fd, "w") as f:
                f.write(f"{epoch}\n")
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(self.path)
            log.info("obeying the master of leader epoch %d (was %d)", epoch, self.seen)
            self.seen = epoch
        return True
