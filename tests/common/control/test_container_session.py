"""What a topology master keeps of the exceptions its containers report."""

from __future__ import annotations

from headwater.common._clock import SYSTEM_CLOCK
from headwater.common.control._container_session import (
    MAX_MESSAGE_CHARS,
    MAX_TRACEBACK_CHARS,
    ContainerSession,
)
from headwater.common.wire.proto import runtime_pb2 as pb


def test_an_exception_of_any_size_is_kept_bounded() -> None:
    """User code raising a 5 MB message: the master kept (and served to every console) all of
    it, 200 times over; now the message's start and the traceback's end, within a bound."""
    session = ContainerSession(SYSTEM_CLOCK)
    huge = pb.ExceptionReport(
        task_id=1,
        component="count",
        message="m" * (5 << 20),
        traceback="t" * (5 << 20) + "\nValueError: where it was raised",
        time_ms=1,
    )
    session.heartbeat(pb.Heartbeat(topology="t", container=0, exceptions=[huge]))
    kept = session.exceptions[-1]
    assert len(kept["message"]) < MAX_MESSAGE_CHARS + 40
    assert kept["message"].startswith("mmm") and "chars cut" in kept["message"]
    assert len(kept["traceback"]) < MAX_TRACEBACK_CHARS + 40
    assert kept["traceback"].endswith("ValueError: where it was raised")
    small = pb.ExceptionReport(task_id=1, component="c", message="boom", traceback="tb")
    session.heartbeat(pb.Heartbeat(topology="t", container=0, exceptions=[small]))
    assert (session.exceptions[-1]["message"], session.exceptions[-1]["traceback"]) == (
        "boom",
        "tb",
    )
