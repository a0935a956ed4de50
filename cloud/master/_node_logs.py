"""Container logs from worker nodes: a request on the attach stream, an answer by RPC.

The master never dials a node, so it asks over the node's own session: it
sends the node that runs a container a ``SendLogs`` order naming a fresh
request id, and waits (``timeout_s``) for the node to call ``ReturnLogs``
with that id. An answer is taken only from the node the request went to
(``answer``; the caller's certificate is checked in ``_cluster.Gate``), and
only once; late or unknown answers are refused. What the node sends is
bounded by the node (common/node/_logs.py) and again here.

The request fails with a ``LogsError``: 409 when no node runs the container
yet or its node is offline, 504 when the node does not answer in time (an
older worker ignores the order), 502 when it answers with an error.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from headwater.common.node._logs import MAX_FILE_BYTES, MAX_FILES, MAX_TAIL
from headwater.common.wire.proto import runtime_pb2 as pb

from ._deployments import Deployment
from ._scheduler import LogsError

TIMEOUT_S = 5.0
MAX_PENDING = 256  # requests waiting for an answer at once; more are refused (503)


class Sessions(Protocol):
    """The node registry as log requests use it (``Nodes``)."""

    def online(self, node_id: str, /) -> bool: ...

    def send(self, node_id: str, command: pb.NodeCommand, /) -> None: ...


class HasSessions(Protocol):
    """What log requests ask of the master: its node registry."""

    @property
    def nodes(self) -> Sessions: ...


@dataclass(frozen=True)
class _Pending:
    node: str
    topology: str
    container: int
    future: asyncio.Future[pb.LogsReply]
    kind: str = ""


class NodeLogs:
    """The master's log requests to worker nodes (on its event loop; nothing blocks)."""

    def __init__(
        self,
        master: HasSessions,
        timeout_s: float = TIMEOUT_S,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.master = master
        self.timeout_s = timeout_s
        self.new_id = new_id
        self.pending: dict[str, _Pending] = {}

    async def fetch(self, dep: Deployment, container: int, tail: int) -> dict[str, Any]:
        """The last ``tail`` lines of ``dep``'s ``container``'s logs, from the node running it."""
        node = dep.assignment.get(container)
        if node is None:
            raise LogsError(
                409,
                f"container {container} of {dep.name!r} runs on no node yet "
                "(it waits for a worker to attach)",
            )
        if not self.master.nodes.online(node):
            raise LogsError(
                409,
                f"container {container} of {dep.name!r} runs on node {node!r}, which is "
                "offline: its logs are on that node's machine until it attaches again",
            )
        what = f"container {container} of {dep.name!r}"
        reply = await self.ask(node, dep.name, container, tail, what)
        return view(dep.name, container, node, tail, reply)

    async def ask(
        self, node: str, name: str, container: int, tail: int, what: str, kind: str = ""
    ) -> pb.LogsReply:
        """Ask ``node`` for the logs of ``what`` (``name``'s ``container``; ``kind``
        "spark-job": the Spark job ``name``'s driver log) and await its answer."""
        if len(self.pending) >= MAX_PENDING:
            raise LogsError(503, "too many log requests are waiting for nodes; try again soon")
        request_id = self.new_id()
        future: asyncio.Future[pb.LogsReply] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = _Pending(node, name, container, future, kind)
        order = pb.SendLogs(
            request_id=request_id,
            topology=name,
            container=container,
            tail=min(max(tail, 1), MAX_TAIL),
            kind=kind,
        )
        try:
            self.master.nodes.send(node, pb.NodeCommand(send_logs=order))
            async with asyncio.timeout(self.timeout_s):
                reply = await future
        except TimeoutError:
            raise LogsError(
                504,
                f"node {node!r} did not send the logs of {what} within {self.timeout_s:g} s "
                "(a busy node, a lost session, or a worker older than the master)",
            ) from None
        finally:
            self.pending.pop(request_id, None)
        if reply.error:
            raise LogsError(502, f"node {node!r} could not read the logs: {reply.error}")
        return reply

    def answer(self, caller: str, reply: pb.LogsReply) -> str | None:
        """Take ``reply`` from node ``caller``; why it is refused, or None."""
        pending = self.pending.get(reply.request_id)
        if pending is None or pending.future.done():
            return f"no log request {reply.request_id[:40]!r} is waiting (it timed out?)"
        if caller != pending.node:
            return f"the log request {reply.request_id[:40]!r} went to another node"
        if (reply.topology, reply.container, reply.kind) != (
            pending.topology,
            pending.container,
            pending.kind,
        ):
            return "the answer names another container than the request"
        pending.future.set_result(reply)
        return None


def view(
    topology: str, container: int, node: str, tail: int, reply: pb.LogsReply
) -> dict[str, Any]:
    """The REST API's answer: the container's log, then its instances' (bounded again)."""
    files = list(reply.files)[:MAX_FILES]
    main = next((f for f in files if f.name == "container.log"), None)
    instances = [f for f in files if f is not main]
    return {
        "topology": topology,
        "container": container,
        "node": node,
        "scheduler": "worker",
        "tail": tail,
        "container_log": _bounded(main.text) if main else "",
        "container_log_path": main.path if main else "",
        "container_log_truncated": bool(main and main.truncated),
        "instance_logs": [
            {"name": f.name, "path": f.path, "text": _bounded(f.text), "truncated": f.truncated}
            for f in instances
        ],
    }


def _bounded(text: str) -> str:
    raw = text.encode()
    if len(raw) <= MAX_FILE_BYTES:
        return text
    return raw[-MAX_FILE_BYTES:].decode("utf-8", errors="replace")
