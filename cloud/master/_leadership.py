"""Standby masters: one leader by election in ZooKeeper, and the leader epoch.

Every master on the same ZooKeeper state joins the election (``Leadership``):
an ephemeral sequential member znode under ``ROOT/election``, holding where the
master answers (its gRPC and REST addresses). The member with the lowest sequence
leads; each other watches the member just before its own, so a leader's end wakes
one standby, not all (no herd). A member whose create lost its reply with the
connection is found again by its ephemeral owner, this session (as Curator's
protected mode does), so a master never waits behind itself. The winner takes
the next leader epoch (``ROOT/leader-epoch``, raised by a compare-and-set, so two
winners can never share one) before it issues an order, and stamps it on every
order; nodes refuse orders stamped lower than the highest they obeyed
(``common/node/_leader.py``).

Losing it: a leader whose ZooKeeper connection is suspended may already have been
replaced (its session may expire while it cannot hear), so it steps down at once,
as Flink's and Curator's leader latches do by default: ``lost`` is set, and the
master stops (a supervisor starts it again, as a standby). A standby reads the
leader's addresses from the lowest member (``leader``), to redirect requests.

kazoo runs its callbacks on its own thread; what the master's event loop waits on
is handed over with ``call_soon_threadsafe``. ``client``: a started kazoo client
whose default ACL is the master's (the state manager's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from typing import Any

log = logging.getLogger("headwater.master")
ELECTION, EPOCH = "election", "leader-epoch"
MEMBER = "member-"
RETRY_S = 0.5  # ZooKeeper away: the campaign tries again this often
RECHECK_S = 5.0
RESIGN_S = 2.0  # the most a stopping master waits to leave the election


class CampaignEnded(Exception):
    """The campaign ended without leading: the master stopped while it stood by."""


class Leadership:
    """This master's place in the election: ``won`` waits to lead; ``lost`` once it no
    longer may."""

    def __init__(self, client: Any, root: str, me: dict[str, Any]) -> None:
        self.client = client
        self.root = root.rstrip("/")
        self.me = me  # what standbys and tools read of the leader: its addresses
        self.epoch = 0
        self.leading = False
        self.lost = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._member = ""
        self._seen = ""  # the leader a standby said it saw last
        self._wake = threading.Event()
        self._quit = threading.Event()  # the master stopped: the campaign ends
        client.add_listener(self._state_changed)

    # -- the election ---------------------------------------------------------------
    async def won(self) -> int:
        """Join the election and wait to lead; the leader epoch this master took. The campaign
        runs on a daemon thread of its own (a master that stops never waits for it to end);
        cancelled (the master stopped while it stood by), it ends."""
        loop = self._loop = asyncio.get_running_loop()
        outcome: asyncio.Future[int] = loop.create_future()

        def settle(epoch: int, exc: Exception | None) -> None:  # on the loop
            if outcome.done():  # cancelled meanwhile
                return
            if exc is None:
                outcome.set_result(epoch)
            else:
                outcome.set_exception(exc)

        def campaign() -> None:
            epoch, exc = 0, None
            try:
                epoch = self._campaign()
            except Exception as failed:  # handed to the master waiting for it
                exc = failed
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(settle, epoch, exc)

        threading.Thread(target=campaign, name="election", daemon=True).start()
        try:
            return await outcome
        except asyncio.CancelledError:
            self.end_campaign()
            raise

    def end_campaign(self) -> None:
        """Stop campaigning (the master stops): the campaign's thread ends at its next step."""
        self._quit.set()
        self._wake.set()

    def _campaign(self) -> int:
        """Lead, however long it takes: ZooKeeper away (a connection lost, a session expired)
        is waited out, and the campaign goes on from where it stands."""
        from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, SessionExpiredError

        while True:
            if self._quit.is_set():
                raise CampaignEnded("the master stopped before it led")
            try:
                if self._step():
                    self.epoch = self._next_epoch()
                    break
            except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as exc:
                log.warning(
                    "election: ZooKeeper unavailable (%s); trying again", type(exc).__name__
                )
                self._quit.wait(RETRY_S)
        if self._quit.is_set():  # won as it stopped: it never leads
            raise CampaignEnded("the master stopped as it won")
        self.leading = True
        log.info("this master leads (leader epoch %d)", self.epoch)
        return self.epoch

    def _step(self) -> bool:
        """Whether this member is the lowest (it leads); else wait for the one before it."""
        folder = f"{self.root}/{ELECTION}"
        self.client.ensure_path(folder)
        members = sorted(c for c in self.client.get_children(folder) if c.startswith(MEMBER))
        if self._member not in members:  # first, or gone with a session that expired
            self._member = self._own(folder, members) or self._join(folder)
            return False
        at = members.index(self._member)
        if at == 0:
            return True
        self._wake.clear()
        if self.client.exists(f"{folder}/{members[at - 1]}", watch=lambda _e: self._wake.set()):
            if members[0] != self._seen:
                self._seen = members[0]
                log.info("standby master: %s leads", self._describe(members[0]))
            self._wake.wait(RECHECK_S)  # the watch wakes it; a check now and then all the same
        return False

    def _join(self, folder: str) -> str:
        created = self.client.create(
            f"{folder}/{MEMBER}", json.dumps(self.me).encode(), ephemeral=True, sequence=True
        )
        return str(created).rsplit("/", 1)[1]

    def _own(self, folder: str, members: list[str]) -> str:
        """A member this session made already ("" if none): a create whose reply a lost
        connection swallowed is in ZooKeeper all the same, and a second member would wait
        behind it, on itself, for as long as the session lives."""
        from kazoo.exceptions import ConnectionLoss

        if self.client.client_id is None:  # suspended: which session is this one's is unknown
            raise ConnectionLoss("no session to recognise this master's own member by")
        session = self.client.client_id[0]
        for member in members:
            stat = self.client.exists(f"{folder}/{member}")
            if stat is not None and stat.ephemeralOwner == session:
                return member
        return ""

    def _next_epoch(self) -> int:
        """One more than the last leader's epoch, by compare-and-set (a value a concurrent
        writer changed is read again)."""
        from kazoo.exceptions import BadVersionError, NodeExistsError

        path = f"{self.root}/{EPOCH}"
        while True:
            if self.client.exists(path) is None:
                try:
                    self.client.create(path, b"1")
                    return 1
                except NodeExistsError:
                    continue
            raw, stat = self.client.get(path)
            epoch = int(raw.decode() or 0) + 1
            try:
                self.client.set(path, str(epoch).encode(), version=stat.version)
                return epoch
            except BadVersionError:
                continue

    def _describe(self, member: str) -> str:
        info = self.member_info(member)
        return str(info.get("grpc") or member) if info else member

    def member_info(self, member: str) -> dict[str, Any] | None:
        try:
            raw, _ = self.client.get(f"{self.root}/{ELECTION}/{member}")
        except Exception:  # (gone meanwhile: no leader to name)
            return None
        info = json.loads(raw.decode() or "{}")
        return info if isinstance(info, dict) else None

    def leader(self) -> dict[str, Any] | None:
        """The leader's addresses as it published them (None: no member, or unreadable)."""
        try:
            members = sorted(
                c
                for c in self.client.get_children(f"{self.root}/{ELECTION}")
                if c.startswith(MEMBER)
            )
        except Exception:  # (ZooKeeper away: no leader known)
            return None
        return self.member_info(members[0]) if members else None

    # -- losing it --------------------------------------------------------------------
    def _state_changed(self, state: str) -> None:  # on kazoo's thread
        if state in ("SUSPENDED", "LOST") and self.leading:
            self.leading = False
            log.error(
                "ZooKeeper connection %s: this master stops leading at once (leader epoch %d)",
                state.lower(),
                self.epoch,
            )
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self.lost.set)
        if state == "LOST":
            self._wake.set()  # a standby's watch will never fire: let its campaign end

    def resign(self) -> None:
        """Leave the election (a master that stops): a standby leads at once, not after
        this session's timeout."""
        self.leading = False
        if self._member and self.client.connected:  # else it goes with the session
            try:
                self.client.delete_async(f"{self.root}/{ELECTION}/{self._member}").get(
                    timeout=RESIGN_S
                )
            except Exception:  # (gone with the session already, or ZooKeeper away)
                log.debug("election member not deleted: it goes with the session")
        self._member = ""
