"""headwater.common.runtime._input_gate: barrier alignment, held frames, restore, revisions.

The gate runs on fake frames against a port that records what it was asked to
do, in order. It keeps no clock: what it does depends on the frames' order alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from headwater.common.runtime._input_gate import InputGate
from headwater.common.wire import Kind, encode_frame, marker_frame, parse_frame
from headwater.common.wire._control import Activate, Restore, control_frame
from headwater.common.wire._frame import STMGR, Frame

TASK = 7


@dataclass(frozen=True)
class Rev:
    sources: frozenset[int]
    downstream: list[int]


@dataclass
class Port:
    """Records, in order: ("process", src, label), ("snapshot", n), ("send", kind, dest, n),
    ("restore", n, blob), ("switch", rev), ("retire",)."""

    events: list[tuple[object, ...]] = field(default_factory=list)

    def process(self, frame: Frame) -> None:
        label = bytes(frame.payload).decode() if frame.kind == Kind.DATA else "control"
        self.events.append(("process", frame.src, label))

    def snapshot(self, checkpoint: int) -> bytes:
        self.events.append(("snapshot", checkpoint))
        return f"blob {checkpoint}".encode()

    def send(self, frame: bytes) -> None:
        f = parse_frame(frame)
        self.events.append(("send", Kind(f.kind).name, f.dest, f.arg))

    def restore(self, checkpoint: int, blob: bytes | None) -> None:
        self.events.append(("restore", checkpoint, blob))

    def switch_to(self, revision: Rev) -> None:
        self.events.append(("switch", revision))

    def retire(self) -> None:
        self.events.append(("retire",))

    def processed(self) -> list[tuple[object, ...]]:
        return [e for e in self.events if e[0] == "process"]

    def take(self) -> list[tuple[object, ...]]:
        events, self.events = self.events, []
        return events


def data(src: int, label: str) -> bytes:
    return encode_frame(Kind.DATA, TASK, src, 1, b"default", label.encode())


def marker(src: int, checkpoint: int) -> bytes:
    return marker_frame(TASK, src, checkpoint)


def gate(
    sources: set[int] | None = None, downstream: list[int] | None = None
) -> tuple[InputGate[Rev], Port]:
    port = Port()
    g = InputGate(
        port, TASK, frozenset({1, 2, 3} if sources is None else sources), downstream or [8, 9]
    )
    return g, port


def snapshot_events(checkpoint: int, downstream: list[int]) -> list[tuple[object, ...]]:
    """A snapshot, then a marker to each downstream task, then the snapshot to the stmgr."""
    return [
        ("snapshot", checkpoint),
        *[("send", "MARKER", t, checkpoint) for t in downstream],
        ("send", "STATE", STMGR, checkpoint),
    ]


def test_frames_pass_while_no_barrier_is_open() -> None:
    g, port = gate()
    for raw in (data(1, "a"), data(2, "b"), control_frame(Activate(), src=STMGR), data(3, "c")):
        g.handle(raw)
    assert port.take() == [
        ("process", 1, "a"),
        ("process", 2, "b"),
        ("process", STMGR, "control"),
        ("process", 3, "c"),
    ]


def test_an_input_past_the_barrier_is_held_until_every_input_delivered_it() -> None:
    g, port = gate()
    g.handle(marker(1, 1))
    g.handle(data(1, "1a"))  # input 1 is past the barrier: held
    g.handle(data(2, "2a"))  # input 2 is not: passes
    g.handle(control_frame(Activate(), src=1))  # control frames are never held
    g.handle(marker(2, 1))
    g.handle(data(2, "2b"))  # held
    g.handle(data(3, "3a"))  # passes
    assert port.take() == [("process", 2, "2a"), ("process", 1, "control"), ("process", 3, "3a")]
    assert g.held == [data(1, "1a"), data(2, "2b")]
    g.handle(marker(3, 1))  # the last input: snapshot, markers on, then what was held
    assert port.take() == [
        *snapshot_events(1, [8, 9]),
        ("process", 1, "1a"),
        ("process", 2, "2b"),
    ]
    assert (g.held, g.seen, g.checkpoints) == ([], set(), 1)
    g.handle(data(1, "1b"))  # aligned: everything passes again
    assert port.take() == [("process", 1, "1b")]


def test_held_frames_are_replayed_in_exactly_their_arrival_order() -> None:
    g, port = gate()
    g.handle(marker(1, 1))
    g.handle(marker(2, 1))
    arrived = [
        data(1, "1a"),
        data(2, "2a"),
        data(2, "2b"),
        data(1, "1b"),
        data(1, "1c"),
        data(2, "2c"),
    ]
    for raw in arrived:
        g.handle(raw)
    assert port.take() == []  # all held
    g.handle(marker(3, 1))
    replayed = [e for e in port.take() if e[0] == "process"]
    assert replayed == [
        ("process", 1, "1a"),
        ("process", 2, "2a"),
        ("process", 2, "2b"),
        ("process", 1, "1b"),
        ("process", 1, "1c"),
        ("process", 2, "2c"),
    ]


def test_a_replayed_marker_opens_the_next_barrier_and_keeps_the_order() -> None:
    """Input 1 ran a whole checkpoint ahead: its next marker is among what was held."""
    g, port = gate({1, 2})
    g.handle(marker(1, 1))
    for raw in (data(1, "1a"), marker(1, 2), data(1, "1b"), data(2, "2a")):
        g.handle(raw)
    assert port.take() == [("process", 2, "2a")]
    g.handle(marker(2, 1))
    assert port.take() == [*snapshot_events(1, [8, 9]), ("process", 1, "1a")]
    assert (g.barrier, g.seen, g.held) == (2, {1}, [data(1, "1b")])  # 1b waits for barrier 2
    g.handle(data(2, "2b"))
    g.handle(marker(2, 2))
    assert port.take() == [("process", 2, "2b"), *snapshot_events(2, [8, 9]), ("process", 1, "1b")]


def test_a_barrier_is_never_dropped() -> None:
    g, port = gate()
    for checkpoint in (1, 2, 3):
        for src in (3, 1):
            g.handle(marker(src, checkpoint))
            g.handle(data(src, f"{src} after {checkpoint}"))  # held, not a reason to drop it
        assert not [e for e in port.events if e[0] == "snapshot"]  # input 2 has not delivered it
        g.handle(marker(2, checkpoint))
        assert port.take() == [  # once, forwarded to every downstream task; then the held
            *snapshot_events(checkpoint, [8, 9]),
            ("process", 3, f"3 after {checkpoint}"),
            ("process", 1, f"1 after {checkpoint}"),
        ]
    assert g.checkpoints == 3
    g.handle(marker(1, 2))  # from a checkpoint already taken: ignored
    assert port.take() == [] and not g.seen


def test_a_task_without_inputs_snapshots_when_told() -> None:
    g, port = gate(set(), [4])
    g.take_snapshot(5)  # a spout: its stmgr's TakeCheckpoint
    assert port.take() == snapshot_events(5, [4])


def test_the_first_restore_keeps_what_came_before_it() -> None:
    g, port = gate()
    early = [data(1, "a"), control_frame(Activate(), src=STMGR), marker(2, 3)]
    malformed = encode_frame(Kind.CONTROL, TASK, STMGR, 0, b"", b"\xff not a message")
    restore = control_frame(Restore(4, b"snap"), src=STMGR)
    later = data(1, "after")
    frames = iter([early[0], malformed, early[1], early[2], restore, later])
    assert g.await_restore(frames) == early  # in order; the malformed one dropped
    assert port.take() == [("restore", 4, b"snap")]
    assert next(frames) == later  # it stopped at the restore


def test_no_restore_before_the_frames_end_stops_the_instance() -> None:
    g, port = gate()
    with pytest.raises(SystemExit) as stop:
        g.await_restore(iter([data(1, "a")]))
    assert stop.value.code == 0 and port.take() == []


def test_a_staged_revision_switches_right_after_its_checkpoint() -> None:
    g, port = gate({1, 2})
    rev = Rev(frozenset({1, 2, 5}), [9, 10])
    g.stage(2, rev)
    g.handle(marker(1, 1))
    g.handle(marker(2, 1))
    assert port.take() == snapshot_events(1, [8, 9])  # not yet
    g.handle(marker(1, 2))
    g.handle(marker(2, 2))
    assert port.take() == [*snapshot_events(2, [8, 9]), ("switch", rev)]
    assert (g.sources, g.downstream, g.next) == (rev.sources, [9, 10], None)
    g.handle(marker(1, 3))
    g.handle(marker(2, 3))
    assert port.take() == []  # the new revision's input 5 has not delivered it
    g.handle(marker(5, 3))
    assert port.take() == snapshot_events(3, [9, 10])  # markers to the new downstream


def test_an_aborted_revision_never_switches() -> None:
    g, port = gate(set())
    g.stage(1, Rev(frozenset(), [1]))
    g.abort()
    g.take_snapshot(1)
    assert port.take() == snapshot_events(1, [8, 9])


def test_a_retiring_task_retires_after_its_checkpoint_and_is_done_once_it_commits() -> None:
    g, port = gate(set())
    g.retire_at(2)
    g.take_snapshot(1)
    assert (g.retired, g.done(1)) == (False, False)
    g.take_snapshot(2)
    assert port.take()[-1] == ("retire",) and g.retired
    assert not g.done(1) and g.done(2)
