"""Mirror of ``heronpy.api``."""
