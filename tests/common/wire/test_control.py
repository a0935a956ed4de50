"""The typed control messages: every one round-trips; bad payloads say what is wrong."""

from __future__ import annotations

import pytest

from headwater.common.wire import _control as c
from headwater.common.wire._codec import encode
from headwater.common.wire._frame import STMGR, Kind, parse_frame

MESSAGES: list[c.ControlMessage] = [
    c.Hello(task=3, pid=4242),
    c.Alive(),
    c.ExceptionReport(task=1, component="split", message="ValueError: x", traceback="tb"),
    c.DeadLetterReport(task=1, component="split", message="dead letter: x", traceback="tb"),
    c.UplinkFeedback(
        component="readings",
        agent="gw-1",
        consumed=7,
        confirmed=5,
        resend_after=-1,
        resync={"gw-2": 3},
    ),
    c.LogCommitted(path="/var/lib/x", offsets={"0": 12, "1": 40}),
    c.Activate(),
    c.Deactivate(),
    c.Stop(),
    c.TakeCheckpoint(id=9),
    c.Commit(id=9),
    c.Prepare(at=12, file="/p/topology.py", plan="/p/plan.json", topology="iot"),
    c.Prepare(at=12, retire=True),
    c.Abort(),
    c.Restore(checkpoint=8, blob=b"\x00snapshot"),
    c.Restore(checkpoint=0, blob=None),
    c.Backpressure(on=True, key="2/7", spouts=("readings", "sensors")),
    c.BackpressureReset(origin=2),
]


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_round_trips(msg: c.ControlMessage) -> None:
    assert c.decode_control(c.encode_control(msg)) == msg


def test_the_wire_form_is_a_map_with_its_type() -> None:
    from headwater.common.wire._codec import decode

    assert decode(c.encode_control(c.Commit(id=4))) == {"type": "commit", "id": 4}


def test_a_control_frame_carries_the_message_to_its_task() -> None:
    f = parse_frame(c.control_frame(c.Stop(), dest=5))
    assert (f.kind, f.dest, f.src) == (Kind.CONTROL, 5, STMGR)
    assert c.decode_control(f.payload) == c.Stop()


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"\xc1", "not msgpack"),
        (encode([1, 2]), "not a map"),
        (encode({"type": "reboot"}), "unknown control message"),
        (encode({"type": "commit"}), "without its fields"),
    ],
)
def test_a_bad_payload_is_a_control_error(payload: bytes, says: str) -> None:
    with pytest.raises(c.ControlError, match=says):
        c.decode_control(payload)


def test_unknown_fields_are_ignored_for_a_newer_sender() -> None:
    assert c.decode_control(encode({"type": "commit", "id": 2, "extra": 1})) == c.Commit(id=2)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        # found by fuzz/fuzz_frames.py: a map for the type was a TypeError (unhashable)
        ({"type": {"on": True}, "key": 4}, "unknown control message"),
        ({"type": ["hello"]}, "unknown control message"),
        # fields of another type decoded, then raised wherever they were read
        ({"type": "hello", "task": [1], "pid": 2}, "'task' is not int"),
        ({"type": "hello", "task": True, "pid": 2}, "'task' is not int"),
        ({"type": "bp", "on": 1, "key": "k", "spouts": []}, "'on' is not bool"),
        ({"type": "bp", "on": True, "key": "k", "spouts": [1]}, r"'spouts' is not tuple\[str"),
        ({"type": "restore", "checkpoint": 1, "blob": "text"}, "'blob' is not bytes | None"),
        (
            {"type": "uplink_feedback", "component": "c", "agent": "a", "resync": {"a": "1"}},
            "resync",
        ),
        ({"type": "prepare", "at": 1, "labels": {"site": 2}}, "'labels'"),
        ({"type": "log_committed", "path": "/p", "offsets": []}, "'offsets'"),
    ],
)
def test_a_message_with_a_field_of_another_type_is_a_control_error(
    body: dict[object, object], says: str
) -> None:
    with pytest.raises(c.ControlError, match=says):
        c.decode_control(encode(body))
