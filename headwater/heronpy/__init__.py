"""heronpy 0.20.5 compatibility: replace the ``heronpy`` import prefix with ``headwater.heronpy``.

The module layout mirrors ``heronpy.api``; every class here is a thin mapping
onto Headwater's native API (``headwater.common.api``), not a second runtime.
"""
