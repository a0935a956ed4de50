"""The master's log requests to workers (cloud/master/_node_logs.py) and who may answer them
(``Gate.logs`` in cloud/master/_cluster.py), with a fake master and transport."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from headwater.cloud.master._cluster import Gate
from headwater.cloud.master._master import Deployment
from headwater.cloud.master._node_logs import NodeLogs
from headwater.cloud.master._scheduler import LogsError
from headwater.common.node._logs import MAX_FILE_BYTES, MAX_TAIL
from headwater.common.security import TRUSTED, Identity
from headwater.common.wire.proto import runtime_pb2 as pb


class FakeNodes:
    def __init__(self) -> None:
        self.offline: set[str] = set()
        self.sent: list[tuple[str, pb.NodeCommand]] = []
        self.enrolment = None

    def online(self, node: str) -> bool:
        return node not in self.offline

    def send(self, node: str, command: pb.NodeCommand) -> None:
        self.sent.append((node, command))


class FakeMaster:
    def __init__(self) -> None:
        self.deployments = {"wc": Deployment("wc", "sha256:x", "wc.py", 2, {0: "w1", 1: "w2"})}
        self.nodes = FakeNodes()
        self.node_logs = NodeLogs(self, timeout_s=0.2, new_id=lambda: f"r{len(self.nodes.sent)}")


class FakeTransport:
    def identity(self, context: Any) -> Identity | None:
        return context  # type: ignore[no-any-return]


def _reply(node: str = "w1", container: int = 0, request: str = "r0", **kw: Any) -> pb.LogsReply:
    return pb.LogsReply(request_id=request, node_id=node, topology="wc", container=container, **kw)


def _run(master: FakeMaster, container: int, tail: int, answer: Any) -> Any:
    """Fetch ``container``'s logs while ``answer(gate)`` plays the node; the view or the error."""

    async def main() -> Any:
        gate = Gate(master, FakeTransport())  # type: ignore[arg-type]
        task = asyncio.ensure_future(
            master.node_logs.fetch(master.deployments["wc"], container, tail)
        )
        while not master.nodes.sent and not task.done():
            await asyncio.sleep(0)
        refused = answer(gate) if master.nodes.sent else None
        try:
            return await task, refused
        except LogsError as exc:
            return exc, refused

    return asyncio.run(main())


def test_the_node_running_the_container_answers_and_the_view_says_what_it_sent() -> None:
    master = FakeMaster()
    files = [
        pb.LogFile(name="container.log", path="/w/wc/container-0/container.log", text="a\nb\n"),
        pb.LogFile(name="task-1.log", path="/w/wc/container-0/task-1.log", text="x\n"),
    ]
    view, refused = _run(
        master, 0, MAX_TAIL * 5, lambda g: g.logs(Identity("worker", "w1"), _reply(files=files))
    )
    assert refused is None
    ((node, command),) = master.nodes.sent
    assert node == "w1" and command.send_logs.tail == MAX_TAIL  # capped before it is sent
    assert (command.send_logs.topology, command.send_logs.container) == ("wc", 0)
    assert view["container_log"] == "a\nb\n" and view["node"] == "w1"
    assert view["instance_logs"] == [
        {
            "name": "task-1.log",
            "path": "/w/wc/container-0/task-1.log",
            "text": "x\n",
            "truncated": False,
        }
    ]
    assert not master.node_logs.pending


@pytest.mark.parametrize(
    ("who", "reply", "code"),
    [
        (Identity("worker", "w2"), _reply(node="w2"), grpc.StatusCode.PERMISSION_DENIED),
        (Identity("worker", "w2"), _reply(), grpc.StatusCode.PERMISSION_DENIED),  # not itself
        (Identity("agent", "w1"), _reply(), grpc.StatusCode.PERMISSION_DENIED),
        (None, _reply(), grpc.StatusCode.UNAUTHENTICATED),
        (Identity("worker", "w1"), _reply(request="forged"), grpc.StatusCode.FAILED_PRECONDITION),
        (Identity("worker", "w1"), _reply(container=1), grpc.StatusCode.PERMISSION_DENIED),
        (TRUSTED, _reply(node="w2"), grpc.StatusCode.FAILED_PRECONDITION),
    ],
)
def test_only_the_asked_worker_answers_for_its_own_container(
    who: Identity | None, reply: pb.LogsReply, code: grpc.StatusCode
) -> None:
    master = FakeMaster()
    result, refused = _run(master, 0, 5, lambda g: g.logs(who, reply))
    assert refused is not None and refused[0] == code
    assert isinstance(result, LogsError) and result.status == 504  # the forgery was not taken


def test_an_answer_is_taken_once() -> None:
    master = FakeMaster()

    def twice(gate: Gate) -> Any:
        assert gate.logs(Identity("worker", "w1"), _reply(files=[pb.LogFile(text="1\n")])) is None
        return gate.logs(Identity("worker", "w1"), _reply(files=[pb.LogFile(text="2\n")]))

    view, refused = _run(master, 0, 5, twice)
    assert refused is not None and refused[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert view["instance_logs"][0]["text"] == "1\n"


def test_offline_unassigned_silent_and_failing_nodes_say_why() -> None:
    master = FakeMaster()
    master.nodes.offline.add("w2")
    error, _ = _run(master, 1, 5, lambda g: None)
    assert error.status == 409 and "'w2', which is offline" in str(error) and not master.nodes.sent
    del master.deployments["wc"].assignment[1]
    error, _ = _run(master, 1, 5, lambda g: None)
    assert error.status == 409 and "runs on no node yet" in str(error)
    error, _ = _run(master, 0, 5, lambda g: None)
    assert error.status == 504 and "did not send the logs of container 0 of 'wc'" in str(error)
    assert not master.node_logs.pending  # the timed-out request is forgotten
    master.nodes.sent.clear()
    error, refused = _run(
        master, 0, 5, lambda g: g.logs(Identity("worker", "w1"), _reply(error="disk gone"))
    )
    assert refused is None and error.status == 502 and "disk gone" in str(error)


def test_the_view_bounds_what_a_node_sends() -> None:
    master = FakeMaster()
    big = "y" * (MAX_FILE_BYTES * 2)
    view, _ = _run(
        master,
        0,
        5,
        lambda g: g.logs(
            Identity("worker", "w1"), _reply(files=[pb.LogFile(name="container.log", text=big)])
        ),
    )
    assert len(view["container_log"]) == MAX_FILE_BYTES
