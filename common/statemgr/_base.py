"""The state manager's contract: byte records at slash-separated paths, and its errors.

A master keeps its records (deployments, tokens, the CA, enrolments, rollouts, Spark
jobs, topology revisions and checkpoint catalogues, health records, model metadata)
through one narrow port, ``StateManager``, as Heron's state manager does: local files
(``LocalStateManager``) or ZooKeeper (``ZkStateManager``). A path is relative and made
of safe segments (``topologies/iot/revisions.json``); what a store keeps at a path is
bytes, usually JSON.

Errors (``HeadwaterError`` is the root of the tree, ``common/_exceptions.py``)::

    HeadwaterError
     +-- StateError              the state manager could not do what was asked
          +-- StateUnavailable   not acknowledged: a disk that refused it, ZooKeeper
          |                      unreachable or silent past the timeout (a write may or
          |                      may not have happened; it was never reported done)
          +-- StateDenied        ZooKeeper's ACL refused it (no or other credentials)
          +-- StateTooLarge      a value over what the backend keeps (``MAX_RECORD_BYTES``)
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .._exceptions import HeadwaterError

MAX_RECORD_BYTES = 16 << 20
"""The largest value a record may hold, on either backend (ZooKeeper's are chunked)."""
RESERVED = "~"
"""A segment starting with it is the backend's own (ZooKeeper's chunks), never a record's."""


class StateError(HeadwaterError):
    """The state manager could not do what was asked; ``reason`` says why, briefly."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class StateUnavailable(StateError):
    """Not acknowledged: the write may or may not have happened, but it was not done."""


class StateDenied(StateError):
    """ZooKeeper's ACL refused the request: this process lacks the master's credentials."""


class StateTooLarge(StateError):
    """A value larger than ``MAX_RECORD_BYTES``."""


@runtime_checkable
class StateManager(Protocol):
    """Byte records at slash-separated relative paths.

    Every call blocks until it is done (a local file written and synced, or ZooKeeper's
    acknowledgement); callers on an event loop accept that, as they did writing files.
    Threadsafe. A path's parents need not exist: ``put`` makes them.
    """

    def get(self, path: str) -> bytes | None:
        """The value at ``path``; None when there is none."""
        ...

    def put(self, path: str, data: bytes) -> None:
        """Keep ``data`` at ``path``, replacing what was there: durable and whole when it
        returns (a reader sees the old value or this one, never a mix); StateError if not."""
        ...

    def delete(self, path: str) -> None:
        """Remove ``path`` and everything under it; nothing there is no error."""
        ...

    def children(self, path: str) -> list[str]:
        """The names directly under ``path`` (records or folders), sorted; [] for none."""
        ...

    def version(self, path: str) -> Hashable | None:
        """What changes whenever ``path``'s value is replaced (without reading it); None
        when there is none. Tells a cache it is stale (tokens another process made)."""
        ...

    def describe(self, path: str) -> str:
        """Where ``path`` is, for messages: a file's path, or a ZooKeeper URL."""
        ...

    def close(self) -> None:
        """Let the backend go (ZooKeeper's session); the manager is not used afterwards."""
        ...


def segments(path: str) -> list[str]:
    """``path``'s segments; StateError naming what is wrong with it."""
    parts = path.split("/") if path else []
    for part in parts:
        if part in ("", ".", "..") or part.startswith(RESERVED) or "\0" in part or "\\" in part:
            raise StateError(f"{path!r} is not a state path (relative, slash-separated names)")
    return parts


def join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


class Subtree:
    """A state manager seen under ``prefix``: a store given its own corner of the state
    (a topology master its ``topologies/NAME``)."""

    def __init__(self, state: StateManager, prefix: str) -> None:
        segments(prefix)
        self.state, self.prefix = state, prefix

    def get(self, path: str) -> bytes | None:
        return self.state.get(join(self.prefix, path))

    def put(self, path: str, data: bytes) -> None:
        self.state.put(join(self.prefix, path), data)

    def delete(self, path: str) -> None:
        self.state.delete(join(self.prefix, path))

    def children(self, path: str) -> list[str]:
        return self.state.children(join(self.prefix, path))

    def version(self, path: str) -> Hashable | None:
        return self.state.version(join(self.prefix, path))

    def describe(self, path: str) -> str:
        return self.state.describe(join(self.prefix, path))

    def close(self) -> None:
        """The whole manager is its owner's to close, not a corner's."""


def under(state: StateManager, prefix: str) -> StateManager:
    """``state`` seen under ``prefix`` (``state`` itself for an empty prefix)."""
    return Subtree(state, prefix) if prefix else state


@dataclass(frozen=True)
class Record:
    """One record of a state manager: what a store that keeps one value is handed."""

    state: StateManager
    path: str

    def read(self) -> bytes | None:
        return self.state.get(self.path)

    def write(self, data: bytes) -> None:
        self.state.put(self.path, data)

    def delete(self) -> None:
        self.state.delete(self.path)

    def version(self) -> Hashable | None:
        return self.state.version(self.path)

    @property
    def where(self) -> str:
        return self.state.describe(self.path)
