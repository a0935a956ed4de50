"""``heronpy.connectors.mock``."""
