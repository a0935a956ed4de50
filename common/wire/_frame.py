"""Binary data-plane frames (layout documented in proto/headwater/v1/runtime.proto).

A stmgr routes a frame by its header alone (``kind`` and ``dest_task``), so
relaying never decodes tuples. On local IPC each frame is preceded by its
length as a little-endian u32; between stmgrs frames ride in a protobuf
``Frames`` message.

Frames come from other processes, so decoding one never trusts it:
``parse_frame`` raises ``FrameError`` (a ``ValueError``) for bytes that are not a
frame, and ``FrameReader`` holds no more than it was fed, whatever length a prefix
declares (at most 4 GiB, the u32's range, and only as the bytes arrive).

The header's fourth field is one u32 whose meaning depends on the kind, so it is
named for what it is, ``arg`` (the kind's argument), and read through accessors
that name what it means:

- ``entries``: data (rows or columns), rooted data, ack, fail, roots and outbox frames
  (the tuples, acks, roots or rows in the payload);
- ``checkpoint``: marker and state frames (the id of the checkpoint the marker
  or the snapshot belongs to), built by ``marker_frame`` and ``state_frame`` alone;
- 0 for every other kind.

``Frame.entries`` / ``Frame.checkpoint`` read a parsed frame, ``frame_entries`` /
``frame_checkpoint`` read the header of raw bytes (a stmgr's hot path). (``count``
would clash with ``tuple.count`` on the ``Frame`` NamedTuple.) The bytes on the
wire are what they always were: the field is renamed, not moved.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

FRAME_HEADER = struct.Struct("<BiiIB")
_KIND_DEST = struct.Struct("<Bi")
_LEN = struct.Struct("<I")
STMGR = -1  # dest_task for frames the stmgr consumes itself


class FrameError(ValueError):
    """Bytes that are not a frame: shorter than the header, a stream name past the end or
    not UTF-8."""


class Kind(IntEnum):
    """What a frame carries; the payload is msgpack unless noted."""

    DATA = 1  # list of value lists
    DATA_ROOTED = 2  # list of [values, roots]; roots = flat [task, root, edge, ...]
    ACK = 3  # to the spout's stmgr: flat [root, xor, ...]
    FAIL = 4  # to the spout's stmgr: flat [root, ...]
    ROOTS = 5  # spout -> own stmgr: flat [root, xor_of_edges, ...]
    ACKED = 6  # stmgr -> spout: [root, ...] whose trees completed
    FAILED = 7  # stmgr -> spout: [root, ...] failed or timed out
    CONTROL = 8  # msgpack dict; see runtime/_control.py
    METRICS = 9  # instance -> stmgr: msgpack dict
    MARKER = 10  # checkpoint barrier to a downstream task, no payload; arg = checkpoint
    STATE = 11  # instance -> stmgr: the task's snapshot; arg = checkpoint
    OUTBOX = 12  # edge outbox sink -> stmgr: i64 sequence + msgpack rows; stream = component
    UPLINK = 13  # ingress -> cloud receiver: i64 seq, i64 prev + msgpack rows; stream = agent
    DATA_COLUMNS = 14  # DATA as a list of field columns, each of ``arg`` values (_columns.py)


CHECKPOINT_KINDS = frozenset({Kind.MARKER, Kind.STATE})  # arg = a checkpoint id


class Frame(NamedTuple):
    kind: int
    dest: int
    src: int
    arg: int  # entries in the payload, or the checkpoint of a marker or state frame
    stream: str
    payload: memoryview

    @property
    def entries(self) -> int:
        """Tuples, acks, roots or rows in the payload (of a frame that carries them)."""
        return self.arg

    @property
    def checkpoint(self) -> int:
        """The checkpoint of a marker or state frame; ``FrameError`` for another kind."""
        if self.kind not in CHECKPOINT_KINDS:
            raise FrameError(f"a frame of kind {self.kind} names no checkpoint")
        return self.arg


def encode_frame(kind: int, dest: int, src: int, arg: int, stream: bytes, payload: bytes) -> bytes:
    """Build one frame (without the IPC length prefix); ``arg`` as the module says."""
    return FRAME_HEADER.pack(kind, dest, src, arg, len(stream)) + stream + payload


def marker_frame(dest: int, src: int, checkpoint: int) -> bytes:
    """The checkpoint marker (barrier) ``src`` sends downstream task ``dest``."""
    return encode_frame(Kind.MARKER, dest, src, checkpoint, b"", b"")


def state_frame(task: int, checkpoint: int, blob: bytes) -> bytes:
    """Task ``task``'s snapshot ``blob`` for ``checkpoint``, to its stmgr."""
    return encode_frame(Kind.STATE, STMGR, task, checkpoint, b"", blob)


UPLINK_HEAD = struct.Struct("<qq")  # an UPLINK frame's sequence number and the one before it


def uplink_frame(task: int, agent: str, seq: int, prev: int, rows: bytes) -> bytes:
    """An agent's batch for the receiver ``task``: the rows stay the bytes the agent sent."""
    return encode_frame(
        Kind.UPLINK, task, STMGR, 0, agent.encode(), UPLINK_HEAD.pack(seq, prev) + rows
    )


def frame_kind(frame: bytes | memoryview) -> int:
    """The frame's ``Kind`` (read from its first byte alone); ``FrameError`` if it is empty."""
    try:
        return frame[0]
    except IndexError:
        raise FrameError("an empty frame") from None


def frame_dest(frame: bytes | memoryview) -> int:
    """The frame's ``dest_task`` (read from the header alone); ``FrameError`` if too short."""
    try:
        return _KIND_DEST.unpack_from(frame)[1]  # type: ignore[no-any-return]
    except struct.error:
        raise FrameError(f"a frame of {len(frame)} bytes: too short for its header") from None


def frame_src(frame: bytes | memoryview) -> int:
    """The frame's ``src_task`` (read from the header alone); the header must be whole."""
    return FRAME_HEADER.unpack_from(frame)[2]  # type: ignore[no-any-return]


def frame_entries(frame: bytes | memoryview) -> int:
    """The header's entry count (of a data, ack, fail, roots or outbox frame)."""
    return FRAME_HEADER.unpack_from(frame)[3]  # type: ignore[no-any-return]


def frame_checkpoint(frame: bytes | memoryview) -> int:
    """The checkpoint of a marker or state frame, read from its header alone."""
    return FRAME_HEADER.unpack_from(frame)[3]  # type: ignore[no-any-return]


def frame_payload(frame: bytes) -> memoryview:
    """The payload after the header and stream name, as a view (the header must be whole)."""
    return memoryview(frame)[FRAME_HEADER.size + frame[FRAME_HEADER.size - 1] :]


def parse_frame(frame: bytes | memoryview) -> Frame:
    """Split a frame into header fields and a zero-copy payload view; ``FrameError`` if
    ``frame`` is not one."""
    try:
        kind, dest, src, arg, slen = FRAME_HEADER.unpack_from(frame)
    except struct.error:
        raise FrameError(
            f"a frame of {len(frame)} bytes: shorter than the {FRAME_HEADER.size}-byte header"
        ) from None
    view = memoryview(frame)
    start = FRAME_HEADER.size
    if start + slen > len(view):
        raise FrameError(f"a frame whose stream name ({slen} bytes) runs past its end")
    try:
        stream = bytes(view[start : start + slen]).decode()
    except UnicodeDecodeError as exc:
        raise FrameError(f"a frame whose stream name is not UTF-8: {exc}") from None
    return Frame(kind, dest, src, arg, stream, view[start + slen :])


def length_prefix(frame: bytes) -> bytes:
    return _LEN.pack(len(frame))


class FrameReader:
    """Incremental parser of length-prefixed frames from a byte stream.

    Feed it whatever ``recv`` returned; it yields complete frames as bytes.
    Each frame is copied once: sliced out of the chunk that holds it whole,
    or joined from views of the chunks it was split across. Those views keep
    their chunks alive until the frame completes, so feed immutable ``bytes``
    (as ``recv`` returns), never a buffer you will reuse. Not thread-safe:
    one reader per connection, used by one thread.
    """

    __slots__ = ("_head", "_missing", "_parts")

    def __init__(self) -> None:
        self._head = b""  # the start of a length prefix split across chunks
        self._parts: list[memoryview] = []  # the body so far of a frame split across chunks
        self._missing = 0  # bytes that body still lacks

    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        if self._head:  # rare: rejoin a split length prefix
            data, self._head = self._head + data, b""
        view = memoryview(data)
        pos, end = 0, len(view)
        if self._missing:  # the rest of a split body
            piece = view[: self._missing]
            self._parts.append(piece)
            self._missing -= len(piece)
            if self._missing:
                return out
            out.append(b"".join(self._parts))
            self._parts.clear()
            pos = len(piece)
        while end - pos >= 4:
            (n,) = _LEN.unpack_from(data, pos)
            if end - pos - 4 < n:  # the body goes on in the next chunk
                self._parts.append(view[pos + 4 :])
                self._missing = n - (end - pos - 4)
                return out
            out.append(bytes(view[pos + 4 : pos + 4 + n]))
            pos += 4 + n
        self._head = bytes(view[pos:])
        return out

    @property
    def buffered(self) -> int:
        """Bytes fed but not yet returned in a frame (length prefixes included)."""
        if self._missing:
            return 4 + sum(len(p) for p in self._parts)
        return len(self._head)
