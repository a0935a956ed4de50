"""The edge device agent: MQTT ingestion, durable log, uplink. Built on headwater.common."""

from ._agent import Agent
from ._ingest import IngestStats, MqttIngest, MqttSource
from ._outbox import Outbox

__all__ = ["Agent", "IngestStats", "MqttIngest", "MqttSource", "Outbox"]
