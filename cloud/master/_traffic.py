"""Bytes the master's gRPC server takes and gives, per method: the master is control only.

A server interceptor wraps each method's (de)serializer, so it counts the
encoded size of every message in and out, for unary and streaming calls
alike, without touching the servicers. The REST API shows the counts
(``GET /api/v1/traffic``); a test asserts from them that edge readings do
not pass through the master, and the bench reads them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc


@dataclass
class MethodTraffic:
    messages_in: int = 0
    bytes_in: int = 0
    messages_out: int = 0
    bytes_out: int = 0


class TrafficCounter(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc: untyped
    def __init__(self) -> None:
        self.methods: dict[str, MethodTraffic] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = str(handler_call_details.method)  # "/headwater.v1.Cluster/Attach"
        counts = self.methods.setdefault(method, MethodTraffic())
        decode = handler.request_deserializer
        encode = handler.response_serializer

        def counted_in(data: bytes) -> Any:
            counts.messages_in += 1
            counts.bytes_in += len(data)
            return decode(data) if decode is not None else data

        def counted_out(message: Any) -> bytes:
            data: bytes = encode(message) if encode is not None else message
            counts.messages_out += 1
            counts.bytes_out += len(data)
            return data

        return handler._replace(request_deserializer=counted_in, response_serializer=counted_out)

    def view(self) -> dict[str, Any]:
        methods = {m: vars(t) for m, t in sorted(self.methods.items())}
        return {
            "bytes_in": sum(t.bytes_in for t in self.methods.values()),
            "bytes_out": sum(t.bytes_out for t in self.methods.values()),
            "methods": methods,
        }
