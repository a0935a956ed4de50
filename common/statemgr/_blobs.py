"""The blob store's port: bytes named by their SHA-256, kept where they outlive one master.

The master's records go through the state manager; its large content-addressed bytes
(topology packages, Spark jobs' packages, model artifacts) are blobs. On its own disk
they are lost with it, so a standby master that takes over could not run what the
records name; ``headwater master --blob-store s3://BUCKET/PREFIX`` keeps each of them in
an S3-compatible bucket too (``cloud/master/_blob_store.py``). The package store and the
model registry take this narrow port, never the object store: ``put`` before the request
that brought the bytes is answered, ``get`` on a miss of their local copy (which they
check against the name, then keep), ``delete`` when nothing uses them any more.

Errors, in the state manager's tree (``_base.py``), so that a request that could not keep
its blob fails as one whose record was not kept does (the REST API's 503)::

    StateError
     +-- StateUnavailable
     |    +-- BlobUnavailable    the blob store could not be reached or failed on its
     |                           side (a put may or may not have happened; never done)
     +-- BlobRefused             the blob store refused the request (its key, its bucket)
"""

from __future__ import annotations

import hashlib
import re
from typing import Protocol

from ._base import StateError, StateUnavailable

_NAME = re.compile(r"[0-9a-f]{64}")


class BlobUnavailable(StateUnavailable):
    """The blob store could not be reached, or failed on its side: try again later."""


class BlobRefused(StateError):
    """The blob store refused the request (credentials, a missing bucket, a bad answer)."""


def blob_name(data: bytes) -> str:
    """The name of ``data`` in a blob store: its SHA-256, 64 lowercase hex digits."""
    return hashlib.sha256(data).hexdigest()


def blob_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a blob (a SHA-256 in lowercase hex), or None if it can."""
    if _NAME.fullmatch(name):
        return None
    return f"{name[:80]!r} is not a blob's name (a SHA-256, 64 lowercase hex digits)"


class Blobs(Protocol):
    """Bytes named by their SHA-256 (``blob_name``) in a store shared by the masters.

    Every call blocks on the network, bounded by the store's timeouts: call them from a
    worker thread, never on an event loop. Threadsafe. A call that is not done raises
    ``BlobUnavailable`` or ``BlobRefused``, naming the store and the blob, never a secret.
    """

    def put(self, name: str, data: bytes) -> None:
        """Keep ``data`` as ``name`` (its SHA-256): whole and durable when it returns."""
        ...

    def get(self, name: str) -> bytes | None:
        """The bytes kept as ``name`` as the store gives them (the caller checks them
        against the name: a store's bytes may have been altered); None when there are none."""
        ...

    def has(self, name: str) -> bool:
        """Whether the store keeps ``name``."""
        ...

    def delete(self, name: str) -> None:
        """Remove ``name``; nothing there is no error."""
        ...

    def describe(self) -> str:
        """Where the store is, for messages (no secret)."""
        ...
