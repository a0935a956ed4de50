"""Which task of ``n`` a key belongs to: the fields grouping's own mapping, made public.

``partition_of(key, n)`` is the index (among the consumer's tasks, in task-id
order) that ``fields("key")`` sends ``key`` to: CRC-32 of the key's msgpack
bytes modulo ``n``, the same in every process. A source that splits its input
with it (one file or log partition per task) can declare the stream keyed
(``key_by(..., partitioned=True)``) and skip the exchange.

>>> [partition_of(f"t{i}", 2) for i in range(6)]
[0, 0, 0, 0, 1, 1]
"""

from __future__ import annotations

import zlib
from typing import Any

import msgpack

_pack = msgpack.Packer(use_bin_type=True, datetime=True).pack


def partition_of(key: Any, n: int) -> int:
    """The index of ``key``'s task among ``n`` (as the fields grouping routes it)."""
    if n < 1:
        raise ValueError(f"a key needs at least one partition to belong to, not {n}")
    return zlib.crc32(_pack(key)) % n
