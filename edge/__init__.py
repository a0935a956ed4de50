"""The edge device agent (discovery, MQTT ingestion, uplink). Built on headwater.common."""
