"""The value codec: msgpack, one call per batch.

msgpack is safe to decode from an untrusted peer (unlike pickle) and its C
extension encodes a batch of positional records at roughly pickle's speed.
Values may be None, bool, int, float, str, bytes, list, tuple (arrives as a
list), dict, and datetime (timezone-aware, carried as a msgpack timestamp).

Decoding takes bytes from another process: ``decode`` returns a value or raises
``DecodeError`` (a ``SerializationError`` and a ``ValueError``), whatever the bytes.
msgpack itself bounds what a declared length can allocate by the input's size and
refuses nesting deeper than its stack.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import msgpack

from .._exceptions import SerializationError

SUPPORTED_TYPES: tuple[type, ...] = (
    type(None),
    bool,
    int,
    float,
    str,
    bytes,
    list,
    tuple,
    dict,
    _dt.datetime,
)


class DecodeError(SerializationError, ValueError):
    """Bytes the codec cannot decode: not msgpack, truncated, trailing bytes, a map key
    that cannot be one (a list), or a timestamp out of datetime's range."""


_packer = msgpack.Packer(use_bin_type=True, datetime=True)


def is_supported_type(tp: object) -> bool:
    """True when values of type ``tp`` (a class) can travel on the wire."""
    return isinstance(tp, type) and issubclass(tp, SUPPORTED_TYPES)


def encode(obj: Any) -> bytes:
    """Encode ``obj``; raise SerializationError naming the offending type."""
    try:
        return _packer.pack(obj)  # type: ignore[no-any-return]
    except (TypeError, ValueError, OverflowError) as exc:
        _packer.reset()
        raise SerializationError(
            f"cannot encode {_first_bad(obj)!r}: {exc}; emit only None, bool, int, float, "
            "str, bytes, list, tuple, dict or timezone-aware datetime values"
        ) from exc


def decode(data: bytes | memoryview) -> Any:
    """Decode bytes produced by :func:`encode`; ``DecodeError`` for any other bytes."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, timestamp=3)
    except (ValueError, TypeError, OverflowError) as exc:
        # msgpack raises ValueError subclasses for malformed input, TypeError for a map
        # key Python cannot hash, OverflowError or ValueError for an out-of-range timestamp
        raise DecodeError(
            f"{len(data)} bytes that are not a value the codec encoded: {type(exc).__name__}: {exc}"
        ) from exc


def _first_bad(obj: Any) -> str:
    """Describe the first value inside ``obj`` that the codec cannot take."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, _dt.datetime) and item.tzinfo is None:
            return "naive datetime (give it a tzinfo)"
        elif not isinstance(item, SUPPORTED_TYPES):
            return type(item).__qualname__
        elif isinstance(item, int) and not -(2**63) <= item < 2**64:
            return "int beyond 64 bits"
    return type(obj).__qualname__
