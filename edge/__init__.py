"""The edge device agent: MQTT ingestion, durable log, uplink. Built on headwater.common.

The names below load on first use (PEP 562): an edge container process
(``headwater.edge.container``) imports this package too, and must not pay for
the agent's daemon (aiohttp, zeroconf, paho, the topology master) it never runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._agent import Agent
    from ._ingest import IngestStats, MqttIngest, MqttSource
    from ._outbox import Outbox

__all__ = ["Agent", "IngestStats", "MqttIngest", "MqttSource", "Outbox"]
_HOME = {
    "Agent": "._agent",
    "IngestStats": "._ingest",
    "MqttIngest": "._ingest",
    "MqttSource": "._ingest",
    "Outbox": "._outbox",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name], __name__), name)
