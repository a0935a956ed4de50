"""How a value larger than one znode is laid out in ZooKeeper: chunks under its record.

ZooKeeper keeps at most ``jute.maxbuffer`` (1 MiB less a byte, by default) in one znode,
and the same bound holds for a whole request, a multi-operation transaction included:
a transaction cannot carry several chunks of a large value at once. So a value over
``CHUNK_BYTES`` is written in steps, committed by one small transaction:

1. each chunk is created as a child of the record, ``~GEN.I``, under a fresh
   generation ``GEN`` (readers do not look at it yet);
2. one transaction sets the record's own data to the header (``MAGIC`` and
   ``{"gen", "chunks", "size", "sha256"}``) and deletes the previous generation's
   chunks: readers see the old value or the new one, never a mix.

A record written for the first time as chunks is made first with a pending header,
which reads as no value. A reader follows the header to its chunks, checks the size
and hash, and reads again when a write replaced them meanwhile. A writer that dies
before step 2 leaves its generation's chunks behind, deleted by the record's next write.
A value that happens to start with ``MAGIC``, and an empty one (a znode without data is a
folder), are written as chunks too, so every value reads back as it was written.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass

from ._base import RESERVED

CHUNK_BYTES = 512 << 10
"""The most a znode is given to hold: half of jute.maxbuffer's default, for headroom."""
MAGIC = b"\x00headwater-chunks\n"
PENDING = MAGIC + b'{"pending": true}'


@dataclass(frozen=True)
class Header:
    gen: str
    chunks: int
    size: int
    sha256: str

    def encode(self) -> bytes:
        doc = {"gen": self.gen, "chunks": self.chunks, "size": self.size, "sha256": self.sha256}
        return MAGIC + json.dumps(doc).encode()

    def names(self) -> list[str]:
        return [chunk_name(self.gen, i) for i in range(self.chunks)]

    def check(self, value: bytes) -> bool:
        return len(value) == self.size and hashlib.sha256(value).hexdigest() == self.sha256


def chunked(data: bytes) -> bool:
    """Whether ``data`` is written as chunks: too large for one znode, starting as a header
    does, or empty (a znode without data is a folder)."""
    return not data or len(data) > CHUNK_BYTES or data.startswith(MAGIC)


def split(data: bytes) -> tuple[Header, list[bytes]]:
    """A fresh generation's header and chunks for ``data``."""
    parts = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    gen = secrets.token_hex(6)
    return Header(gen, len(parts), len(data), hashlib.sha256(data).hexdigest()), parts


def header(data: bytes) -> Header | None:
    """The header ``data`` is (None: a pending record, read as no value). Only for data
    that starts with ``MAGIC``."""
    doc = json.loads(data[len(MAGIC) :])
    if doc.get("pending"):
        return None
    return Header(str(doc["gen"]), int(doc["chunks"]), int(doc["size"]), str(doc["sha256"]))


def chunk_name(gen: str, index: int) -> str:
    return f"{RESERVED}{gen}.{index}"


def is_chunk(name: str) -> bool:
    return name.startswith(RESERVED)


def stale(children: list[str], keep: Header | None) -> list[str]:
    """The chunks among a record's ``children`` that are not ``keep``'s."""
    kept = set(keep.names()) if keep is not None else set()
    return [c for c in children if is_chunk(c) and c not in kept]
