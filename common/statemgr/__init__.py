"""The master's state manager: its records behind one port, in local files or ZooKeeper.

``StateManager`` is the port (get, put, delete, children over byte records at
slash-separated paths); ``LocalStateManager`` keeps them as files in a state folder
(one machine, the demo, edge-only setups, every agent), ``ZkStateManager`` in
ZooKeeper through kazoo (imported only when one is made). ``open_state`` picks one
from ``--state``. A store keeping one value is handed a ``Record``; one keeping a
folder of them, a ``StateManager`` (``under`` gives it its own corner). Large
content-addressed bytes (packages, model artifacts) go through another port, ``Blobs``
(``_blobs.py``), to a store that outlives one master.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import (
    MAX_RECORD_BYTES,
    Record,
    StateDenied,
    StateError,
    StateManager,
    StateTooLarge,
    StateUnavailable,
    under,
)
from ._blobs import BlobRefused, Blobs, BlobUnavailable, blob_name, blob_name_problem
from ._local import LocalStateManager, as_record, as_state
from ._open import AUTH_WITHOUT_ZK, is_zk, open_state, parse_zk, read_auth

if TYPE_CHECKING:
    from ._zk import ZkStateManager

__all__ = [
    "AUTH_WITHOUT_ZK",
    "MAX_RECORD_BYTES",
    "BlobRefused",
    "BlobUnavailable",
    "Blobs",
    "LocalStateManager",
    "Record",
    "StateDenied",
    "StateError",
    "StateManager",
    "StateTooLarge",
    "StateUnavailable",
    "ZkStateManager",
    "as_record",
    "as_state",
    "blob_name",
    "blob_name_problem",
    "is_zk",
    "open_state",
    "parse_zk",
    "read_auth",
    "under",
]


def __getattr__(name: str) -> Any:
    if name == "ZkStateManager":  # kazoo loads with it, never on local files
        from ._zk import ZkStateManager

        return ZkStateManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
