"""``heronpy.connectors``."""
