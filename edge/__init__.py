"""The edge device agent: MQTT ingestion, durable log, uplink. Built on headwater.common."""

from ._ingest import IngestStats, MqttIngest, MqttSource

__all__ = ["IngestStats", "MqttIngest", "MqttSource"]
