"""The state manager in ZooKeeper, through kazoo: the master's records shared by a cluster.

A record is the znode at its path under the state's root (the URL's chroot,
``zk://h1:2181,h2:2181/headwater`` keeps ``tokens.json`` at
``/headwater/tokens.json``); folders are znodes without data. What ZooKeeper
guarantees is what a put gives: a write returns once a quorum has logged it, and a
value larger than a znode is chunked under its record and committed by one
transaction (``_zk_chunks.py``), so a reader sees the old value or the new one.

Security: every znode is created with one ACL, a digest ACL for the master's
identity (``user:password``, read from a file by ``open_state``), and the client
authenticates with it. A client without those credentials can read neither the CA's
key nor the tokens, and can write nothing under the root (ZooKeeper still shows that a
znode exists and its stat: that is not the ACL's to hide).

Connection loss: kazoo reconnects by itself (with backoff, for ever) and re-sends the
credentials. A call made while the client is not connected fails at once, and one
that ZooKeeper does not answer within ``timeout`` seconds fails then: both raise
``StateUnavailable``, so a request that needed the write fails with a clear error
instead of being lost. Such a write may still have happened; it was never reported
done. kazoo is imported when a ``ZkStateManager`` is made, so processes on local files
never load it.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import Any

from . import _zk_chunks as chunks
from ._base import MAX_RECORD_BYTES, StateDenied, StateTooLarge, StateUnavailable, segments

log = logging.getLogger("headwater.statemgr")
READ_ATTEMPTS = 5  # a chunked value replaced while it is read is read again, this often
SESSION_S = 6.0
"""ZooKeeper's session timeout: a master that dies loses its session (and a standby leads)
this long after; one cut off notices the loss (suspended) after two thirds of it."""


class ZkStateManager:
    """Records as znodes under ``root`` on the ZooKeeper ensemble ``hosts``. Threadsafe
    (kazoo's client is); every call blocks until ZooKeeper answers or ``timeout``."""

    def __init__(
        self,
        hosts: str,
        root: str,
        user: str,
        password: str,
        *,
        timeout: float = 10.0,
        connect_timeout: float = 15.0,
    ) -> None:
        """Connect (within ``connect_timeout`` seconds), make the root if it is not there,
        and check this identity may read it: StateUnavailable or StateDenied if not."""
        from kazoo.client import KazooClient
        from kazoo.security import make_digest_acl

        self.hosts, self.root, self.timeout = hosts, root.rstrip("/") or "/", timeout
        self.client: Any = KazooClient(
            hosts=hosts,
            auth_data=[("digest", f"{user}:{password}")],
            default_acl=[make_digest_acl(user, password, all=True)],
            connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 2.0},
            timeout=SESSION_S,
        )
        self._lost = False
        self._made: set[str] = set()  # folders known to exist (a put makes its parents)
        self.client.add_listener(self._state_changed)
        try:
            self.client.start(timeout=connect_timeout)
        except self.client.handler.timeout_exception:
            self.client.close()
            raise StateUnavailable(
                f"cannot reach ZooKeeper at {hosts} within {connect_timeout:g} s: is it "
                "running there, and is the address right?",
                "unreachable",
            ) from None
        try:
            self._wait("open", "", self.client.ensure_path_async(self.root))
            self._wait("list", "", self.client.get_children_async(self.root))
        except BaseException:
            self.close()
            raise

    # -- plumbing -------------------------------------------------------------------------
    def _node(self, path: str) -> str:
        parts = segments(path)
        return "/".join([self.root.rstrip("/"), *parts]) if parts else self.root

    def describe(self, path: str) -> str:
        return f"zk://{self.hosts}{self._node(path)}"

    def _state_changed(self, state: str) -> None:  # on kazoo's thread
        if state in ("SUSPENDED", "LOST") and not self._lost:
            self._lost = True
            log.warning("ZooKeeper at %s: connection %s; reconnecting", self.hosts, state.lower())
        elif state == "CONNECTED" and self._lost:
            self._lost = False
            log.info("ZooKeeper at %s: connected again", self.hosts)

    def _ready(self, what: str, path: str) -> None:
        if not self.client.connected:
            raise StateUnavailable(
                f"the {what} of {self.describe(path)} was not made: ZooKeeper is not "
                f"connected ({str(self.client.state).lower()}; kazoo is reconnecting)",
                "not connected",
            )

    def _wait(self, what: str, path: str, pending: Any) -> Any:
        """``pending``'s result; ZooKeeper's refusals and silences as StateErrors (NoNode,
        NodeExists and the like are the caller's)."""
        from kazoo import exceptions as ke

        try:
            return pending.get(timeout=self.timeout)
        except self.client.handler.timeout_exception:
            raise StateUnavailable(
                f"ZooKeeper did not acknowledge the {what} of {self.describe(path)} within "
                f"{self.timeout:g} s: it was not done",
                "no acknowledgement",
            ) from None
        except ke.NoAuthError:
            raise _denied(what, self.describe(path)) from None
        except (ke.ConnectionLoss, ke.SessionExpiredError, ke.ConnectionClosedError) as exc:
            raise StateUnavailable(
                f"ZooKeeper's connection was lost during the {what} of {self.describe(path)} "
                f"({type(exc).__name__}): it was not acknowledged",
                "connection lost",
            ) from exc

    # -- the contract ---------------------------------------------------------------------
    def get(self, path: str) -> bytes | None:
        from kazoo.exceptions import NoNodeError

        node = self._node(path)
        self._ready("read", path)
        for _ in range(READ_ATTEMPTS):
            try:
                data: bytes = self._wait("read", path, self.client.get_async(node))[0]
            except NoNodeError:
                return None
            if not data:  # a folder (a record's empty value is kept as chunks)
                return None
            if not data.startswith(chunks.MAGIC):
                return data
            head = chunks.header(data)
            if head is None:  # a first write of chunks under way
                return None
            asked = [self.client.get_async(f"{node}/{name}") for name in head.names()]
            try:
                value = b"".join(self._wait("read", path, a)[0] for a in asked)
            except NoNodeError:
                continue  # replaced while read
            if head.check(value):
                return value
        raise StateUnavailable(
            f"{self.describe(path)} kept changing while it was read", "kept changing"
        )

    def put(self, path: str, data: bytes) -> None:
        if len(data) > MAX_RECORD_BYTES:
            raise StateTooLarge(
                f"cannot save {self.describe(path)}: {len(data)} bytes is over the "
                f"{MAX_RECORD_BYTES}-byte bound of a state record",
                "too large",
            )
        if not path:
            raise StateUnavailable(f"cannot save {self.describe(path)}: it is the root", "root")
        self._ready("save", path)
        node = self._node(path)
        parent = node.rsplit("/", 1)[0]
        for attempt in range(3):
            if parent not in self._made:
                self._wait("save", path, self.client.ensure_path_async(parent))
                self._made.add(parent)
            if self._put_once(path, node, data):
                return
            self._made.discard(parent)  # another client may have deleted it
            log.debug("the save of %s met a concurrent change (try %d)", node, attempt + 1)
        raise StateUnavailable(
            f"cannot save {self.describe(path)}: another client kept changing it", "contended"
        )

    def _put_once(self, path: str, node: str, data: bytes) -> bool:
        """One try at ``put``; False when a concurrent change made the transaction fail."""
        from kazoo import exceptions as ke

        try:
            children = self._wait("save", path, self.client.get_children_async(node))
            exists = True
        except ke.NoNodeError:
            children, exists = [], False
        keep: chunks.Header | None = None
        head = data
        if chunks.chunked(data):
            keep, parts = chunks.split(data)
            if not exists:  # reads as no value until the header is set below
                try:
                    self._wait("save", path, self.client.create_async(node, chunks.PENDING))
                except ke.NodeExistsError:
                    return False
                exists = True
            for name, part in zip(keep.names(), parts, strict=True):
                self._wait("save", path, self.client.create_async(f"{node}/{name}", part))
            head = keep.encode()
        commit = self.client.transaction()
        if exists:
            commit.set_data(node, head)
        else:
            commit.create(node, head)
        for name in chunks.stale(children, keep):
            commit.delete(f"{node}/{name}")
        results = self._wait("save", path, commit.commit_async())
        errors = [r for r in results if isinstance(r, Exception)]
        if any(isinstance(e, ke.NoAuthError) for e in errors):
            raise _denied("save", self.describe(path))
        return not errors

    def delete(self, path: str) -> None:
        from kazoo.exceptions import NoNodeError, NotEmptyError

        if not path:
            raise StateUnavailable(f"will not delete the whole state at {self.describe(path)}")
        self._ready("delete", path)
        gone = self._node(path)
        self._made = {f for f in self._made if f != gone and not f.startswith(gone + "/")}
        for node in self._subtree(path, gone):  # children before their parent
            try:
                self._wait("delete", path, self.client.delete_async(node))
            except NoNodeError:
                pass  # gone already
            except NotEmptyError:
                raise StateUnavailable(
                    f"cannot delete {self.describe(path)}: something was written under it "
                    "meanwhile",
                    "changed",
                ) from None

    def _subtree(self, path: str, node: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            names = self._wait("delete", path, self.client.get_children_async(node))
        except NoNodeError:
            return []
        return [n for name in sorted(names) for n in self._subtree(path, f"{node}/{name}")] + [node]

    def children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        self._ready("list", path)
        try:
            names = self._wait("list", path, self.client.get_children_async(self._node(path)))
        except NoNodeError:
            return []
        return sorted(str(n) for n in names if not chunks.is_chunk(n))

    def version(self, path: str) -> Hashable | None:
        """The znode's last modification's transaction id (a chunked value's header is
        set at each write)."""
        self._ready("read", path)
        stat = self._wait("read", path, self.client.exists_async(self._node(path)))
        return None if stat is None else int(stat.mzxid)

    def close(self) -> None:
        self.client.remove_listener(self._state_changed)  # a close is no loss to report
        try:
            self.client.stop()
        finally:
            self.client.close()

    def __repr__(self) -> str:
        return f"ZkStateManager({self.hosts!r}, {self.root!r})"


def _denied(what: str, where: str) -> StateDenied:
    return StateDenied(
        f"ZooKeeper refused the {what} of {where}: its ACL is for another identity; give the "
        "master's ZooKeeper credentials (user:password) with --state-auth-file",
        "not authorised",
    )
