"""Columnar data frames: a batch of untracked tuples as one list per field.

A batch of records ``[[k0, v0], [k1, v1], ...]`` travels as ``[[k0, k1, ...], [v0, v1,
...]]`` (``Kind.DATA_COLUMNS``) when every tuple of it has the same number of fields, one
or more. The codec then packs and unpacks a few long flat lists instead of a small list
per tuple: about a third of the CPU of rows at both ends for a word count's ``[word, 1]``
(bench/RESULTS.md, "Columnar frames"), and a receiver that takes columns (the DSL's
chains: ``ColumnBolt``) walks them with ``zip`` and makes no list per tuple at all. A batch
of ragged tuples, and a rooted batch (whose entries carry their tuple trees), stay rows.

Decoding takes bytes from another process: ``decode_columns`` checks the shape it was
promised (a list of lists, each as long as the frame's entry count) and raises
``DecodeError`` otherwise, as ``decode`` does for bytes that are not a value at all.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from .._exceptions import EmitError
from ._codec import DecodeError, decode
from ._frame import Frame, Kind

_SEQUENCES = frozenset({list, tuple})


def columns(entries: list[Any]) -> list[list[Any]] | None:
    """``entries``' fields as columns, or None when they are not all value lists (or
    tuples) of the same number of fields, one or more (a stream's tuples need not have its
    declared fields, and a record given to a bound emit is sent as it is)."""
    if not entries or not {*map(type, entries)} <= _SEQUENCES:
        return None
    width = len(entries[0])
    if not width:
        return None
    try:  # a field at a time, in C (``zip(*entries)`` costs twice as much for 1,000 tuples)
        cols = [list(map(itemgetter(i), entries)) for i in range(width)]
    except IndexError:  # a tuple with fewer fields
        return None
    # none has fewer, so the same total means none has more
    return cols if sum(map(len, entries)) == width * len(entries) else None


def column_length(cols: Any) -> int:
    """How many tuples ``cols`` (given to ``Context.emitter_columns``) holds; ``EmitError``
    unless it is a list of lists (or tuples) of one length."""
    if type(cols) not in _SEQUENCES or not {*map(type, cols)} <= _SEQUENCES:
        raise EmitError("emit columns as a list of lists, one list per field")
    n = len(cols[0]) if cols else 0
    for col in cols:
        if len(col) != n:
            raise EmitError(f"columns of {[len(c) for c in cols]} values: give each as many")
    return n


def column_rows(cols: Any) -> list[list[Any]]:
    """The tuples of ``cols`` (given to ``Context.emitter_columns``) as value lists, checked
    as ``column_length`` checks them: for a context that emits them one at a time."""
    column_length(cols)
    return rows(cols)


def decode_columns(payload: bytes | memoryview, entries: int) -> list[list[Any]]:
    """The columns of a ``DATA_COLUMNS`` frame of ``entries`` tuples; ``DecodeError`` for a
    payload of any other shape."""
    cols = decode(payload)
    if type(cols) is not list or not cols:
        raise DecodeError(f"columns of {entries} tuples that are not a list of columns")
    for col in cols:
        if type(col) is not list or len(col) != entries:
            raise DecodeError(f"a column that is not a list of {entries} values")
    return cols


def rows(cols: list[list[Any]]) -> list[list[Any]]:
    """The tuples of ``cols`` as value lists, as a rows frame would have carried them."""
    return list(map(list, zip(*cols, strict=True)))


def data_rows(frame: Frame) -> list[Any]:
    """The entries of a data frame of any layout: value lists, or ``[values, roots]`` for a
    rooted frame (``DecodeError`` for a payload of another shape)."""
    if frame.kind == Kind.DATA_COLUMNS:
        return rows(decode_columns(frame.payload, frame.entries))
    entries = decode(frame.payload)
    if type(entries) is not list:
        raise DecodeError(f"rows of {frame.entries} tuples that are not a list")
    return entries
