"""The control messages of the data plane, typed: one frozen dataclass per message.

They ride ``Kind.CONTROL`` frames (``_frame.py``) between an instance and its
stream manager, and between stream managers (backpressure). On the wire each
is a msgpack map with a ``type`` key and the message's fields, so a message
is readable in a capture and old and new processes agree. Every sender builds
one of these classes and every receiver gets one back from
``decode_control``; the ``type`` strings live here alone. ``decode_control``
raises ``ControlError`` for anything else: bytes that are not msgpack, an
unknown ``type``, a missing field or a field of another type.

Who sends what:

=====================  =====================  =========================================
message                from -> to             meaning
=====================  =====================  =========================================
Hello                  instance -> stmgr      the task's process is up (its pid)
Alive                  instance -> stmgr      the gateway's heartbeat
ExceptionReport        instance -> stmgr      user code raised; the task is going down
DeadLetterReport       instance -> stmgr      a record was dead-lettered (shown, no crash)
UplinkFeedback         receiver -> stmgr      what a cloud receiver took and confirmed
LogCommitted           log spout -> stmgr     ingest-log offsets a complete checkpoint holds
Activate, Deactivate   stmgr -> spout         start or pause ``next_tuple``
Stop                   container -> instance  finish and exit
TakeCheckpoint         container -> spout     snapshot now and send markers for ``id``
Commit                 container -> instance  checkpoint ``id`` is complete
Prepare                container -> instance  stage a revision that switches at ``at``
Abort                  container -> instance  forget the staged revision
Restore                container -> instance  start from this snapshot (exactly once)
Backpressure           stmgr -> stmgr         a congestion key on or off, and its spouts
BackpressureReset      stmgr -> stmgr         forget every key of ``origin``
=====================  =====================  =========================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from ._codec import decode, encode
from ._frame import STMGR, Kind, encode_frame


class ControlError(ValueError):
    """A control payload that is not a known message with the fields it needs."""


@dataclass(frozen=True, slots=True)
class Hello:
    TYPE: ClassVar[str] = "hello"
    task: int
    pid: int


@dataclass(frozen=True, slots=True)
class Alive:
    TYPE: ClassVar[str] = "alive"


@dataclass(frozen=True, slots=True)
class ExceptionReport:
    TYPE: ClassVar[str] = "exception"
    task: int
    component: str
    message: str
    traceback: str


@dataclass(frozen=True, slots=True)
class DeadLetterReport:
    TYPE: ClassVar[str] = "dead_letter"
    task: int
    component: str
    message: str
    traceback: str


@dataclass(frozen=True, slots=True)
class UplinkFeedback:
    TYPE: ClassVar[str] = "uplink_feedback"
    component: str
    agent: str
    consumed: int = 0
    confirmed: int = 0
    resend_after: int = -1
    resync: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LogCommitted:
    TYPE: ClassVar[str] = "log_committed"
    path: str
    offsets: dict[str, int]


@dataclass(frozen=True, slots=True)
class Activate:
    TYPE: ClassVar[str] = "activate"


@dataclass(frozen=True, slots=True)
class Deactivate:
    TYPE: ClassVar[str] = "deactivate"


@dataclass(frozen=True, slots=True)
class Stop:
    TYPE: ClassVar[str] = "stop"


@dataclass(frozen=True, slots=True)
class TakeCheckpoint:
    TYPE: ClassVar[str] = "checkpoint"
    id: int


@dataclass(frozen=True, slots=True)
class Commit:
    TYPE: ClassVar[str] = "commit"
    id: int


@dataclass(frozen=True, slots=True)
class Prepare:
    """Stage a revision: retire at checkpoint ``at``, or route with the new plan from it."""

    TYPE: ClassVar[str] = "prepare"
    at: int
    retire: bool = False
    file: str = ""  # the revision's topology file
    plan: str = ""  # its physical plan (JSON file)
    topology: str | None = None  # the topology's name in the file, if it holds several
    domain: str | None = None  # the checkpoint domain the process runs (None: the whole)
    labels: dict[str, str] = field(default_factory=dict)  # the agent's labels (edge)
    # a retiring outbox sink's last row, sealed at ``at``: a keyed move's fence (msgpack)
    fence: bytes | None = None


@dataclass(frozen=True, slots=True)
class Abort:
    TYPE: ClassVar[str] = "abort"


@dataclass(frozen=True, slots=True)
class Restore:
    TYPE: ClassVar[str] = "restore"
    checkpoint: int
    blob: bytes | None  # the task's snapshot; None: start empty


@dataclass(frozen=True, slots=True)
class Backpressure:
    TYPE: ClassVar[str] = "bp"
    on: bool
    key: str  # "CONTAINER/local key"
    spouts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BackpressureReset:
    TYPE: ClassVar[str] = "bp_reset"
    origin: int


ControlMessage = (
    Hello
    | Alive
    | ExceptionReport
    | DeadLetterReport
    | UplinkFeedback
    | LogCommitted
    | Activate
    | Deactivate
    | Stop
    | TakeCheckpoint
    | Commit
    | Prepare
    | Abort
    | Restore
    | Backpressure
    | BackpressureReset
)

_BY_TYPE: dict[str, type[Any]] = {
    cls.TYPE: cls
    for cls in (
        Hello,
        Alive,
        ExceptionReport,
        DeadLetterReport,
        UplinkFeedback,
        LogCommitted,
        Activate,
        Deactivate,
        Stop,
        TakeCheckpoint,
        Commit,
        Prepare,
        Abort,
        Restore,
        Backpressure,
        BackpressureReset,
    )
}

# What a field's value must be, by its annotation (as written: this module postpones them).
# A payload comes from another process, so a field of another type is refused here rather
# than raising later in whatever reads it (a list for a task id is unhashable).
_CHECKS: dict[str, Callable[[Any], bool]] = {
    "int": lambda v: type(v) is int,
    "str": lambda v: type(v) is str,
    "bool": lambda v: type(v) is bool,
    "str | None": lambda v: v is None or type(v) is str,
    "bytes | None": lambda v: v is None or type(v) is bytes,
    "dict[str, int]": lambda v: (
        type(v) is dict and all(type(k) is str and type(x) is int for k, x in v.items())
    ),
    "dict[str, str]": lambda v: (
        type(v) is dict and all(type(k) is str and type(x) is str for k, x in v.items())
    ),
    "tuple[str, ...]": lambda v: type(v) is tuple and all(type(x) is str for x in v),
}
# a message class with a field of a new type fails here, at import, until _CHECKS has it
_FIELDS: dict[type[Any], dict[str, Callable[[Any], bool]]] = {
    cls: {f.name: _CHECKS[str(f.type)] for f in fields(cls)} for cls in _BY_TYPE.values()
}


def encode_control(msg: ControlMessage) -> bytes:
    body = asdict(msg)
    body["type"] = msg.TYPE
    return encode(body)


def decode_control(payload: bytes | memoryview) -> ControlMessage:
    """The message in a CONTROL frame's payload; ``ControlError`` if it is none we know."""
    try:
        body = decode(payload)
    except Exception as exc:  # msgpack raises several types
        raise ControlError(f"a control payload that is not msgpack: {exc}") from exc
    if not isinstance(body, dict):
        raise ControlError(f"a control payload that is not a map: {type(body).__name__}")
    kind = body.pop("type", None)
    cls = _BY_TYPE.get(kind) if type(kind) is str else None
    if cls is None:
        raise ControlError(f"an unknown control message: {kind!r:.80} {body!r:.200}")
    known = _FIELDS[cls]
    if cls is Backpressure and isinstance(body.get("spouts"), list):
        body["spouts"] = tuple(body["spouts"])  # msgpack gives lists back
    args = {k: v for k, v in body.items() if k in known}
    for name, value in args.items():
        if not known[name](value):
            raise ControlError(
                f"a {cls.TYPE!r} control message whose {name!r} is not "
                f"{_annotation(cls, name)}: {value!r:.80}"
            )
    try:
        msg: ControlMessage = cls(**args)
    except TypeError as exc:
        raise ControlError(f"a {cls.TYPE!r} control message without its fields: {exc}") from exc
    return msg


def _annotation(cls: type[Any], name: str) -> str:
    return next(str(f.type) for f in fields(cls) if f.name == name)


def control_frame(msg: ControlMessage, dest: int = STMGR, src: int = STMGR) -> bytes:
    """A CONTROL frame (without the IPC length prefix) carrying ``msg``."""
    return encode_frame(Kind.CONTROL, dest, src, 0, b"", encode_control(msg))
