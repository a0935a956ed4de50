"""The bytes of every frame kind and of the checkpoint cycle's protobuf messages, pinned:
renaming the frame header's field, building marker and state frames through their own
constructors and giving the protobuf messages the cycle's names changed no byte on the wire.

Each expected value was taken from the encoders before the renames (issue 34)."""

from __future__ import annotations

import pytest

from headwater.common.runtime._outbox_sink import outbox_frame
from headwater.common.wire import (
    Kind,
    encode_frame,
    frame_checkpoint,
    frame_entries,
    frame_payload,
    frame_src,
    marker_frame,
    parse_frame,
    state_frame,
)
from headwater.common.wire._control import Commit, control_frame
from headwater.common.wire._frame import STMGR, FrameError, uplink_frame
from headwater.common.wire.proto import runtime_pb2 as pb

HEADER_TAIL = "050000000300000007000000027374706179"  # dest 5, src 3, arg 7, b"st", b"pay"


@pytest.mark.parametrize("kind", list(Kind))
def test_every_kind_encodes_as_before(kind: Kind) -> None:
    frame = encode_frame(kind, 5, 3, 7, b"st", b"pay")
    assert frame == bytes.fromhex(f"{kind:02x}{HEADER_TAIL}")


def test_marker_and_state_frames_are_the_bytes_they_were() -> None:
    assert marker_frame(4, 2, 9) == bytes.fromhex("0a04000000020000000900000000")
    assert state_frame(2, 9, b"blob") == bytes.fromhex("0bffffffff020000000900000000626c6f62")


def test_the_other_constructors_are_the_bytes_they_were() -> None:
    assert uplink_frame(6, "ag", 10, 8, b"rows") == bytes.fromhex(
        "0d06000000ffffffff000000000261670a000000000000000800000000000000726f7773"
    )
    assert control_frame(Commit(9), dest=3) == bytes.fromhex(
        "0803000000ffffffff000000000082a2696409a474797065a6636f6d6d6974"
    )
    assert outbox_frame(2, "sink", 11, [[1]]) == bytes.fromhex(
        "0cffffffff02000000010000000473696e6b0b00000000000000919101"
    )


def test_a_checkpoint_reads_back_from_a_marker_and_a_state_frame() -> None:
    marker, state = parse_frame(marker_frame(4, 2, 9)), parse_frame(state_frame(2, 9, b"blob"))
    assert (marker.kind, marker.dest, marker.src, marker.checkpoint) == (Kind.MARKER, 4, 2, 9)
    assert (state.kind, state.dest, state.src, state.checkpoint) == (Kind.STATE, STMGR, 2, 9)
    assert bytes(state.payload) == b"blob"
    raw = state_frame(2, 9, b"blob")
    assert (frame_src(raw), frame_checkpoint(raw), bytes(frame_payload(raw))) == (2, 9, b"blob")


def test_entries_and_checkpoint_name_the_one_header_word() -> None:
    data = encode_frame(Kind.DATA, 5, 3, 7, b"st", b"pay")
    assert parse_frame(data).entries == frame_entries(data) == 7
    with pytest.raises(FrameError, match="names no checkpoint"):
        parse_frame(data).checkpoint  # noqa: B018


def test_the_checkpoint_cycles_protobuf_messages_are_the_bytes_they_were() -> None:
    take = pb.Command(checkpoint=pb.TakeCheckpoint(id=4, epoch=2))  # was CheckpointRequest
    commit = pb.Command(commit=pb.Commit(id=4, keep_from=3))  # was CheckpointCommit
    restore = pb.Command(restore=pb.Restore(checkpoint_id=4, epoch=2, revision=1))
    ack = pb.CheckpointAck(
        topology="t", container=1, task_id=2, checkpoint_id=4, epoch=2, size_bytes=9
    )
    restored = pb.RestoreAck(topology="t", container=1, epoch=2, checkpoint_id=4, ok=True)
    assert [m.SerializeToString().hex() for m in (take, commit, restore, ack, restored)] == [
        "120408041002",
        "1a0408041003",
        "2206080410021801",
        "0a017410011802200428023009",
        "0a01741001180220042801",
    ]
