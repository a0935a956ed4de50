"""The runtime: stream manager, instances, acking and backpressure.

Kept import-light: instance processes import this package and must not pay
for gRPC. Import ``_stmgr`` directly where a stream manager is needed.
"""

from ..plan._routing import key_hash
from . import (
    _scoring,  # noqa: F401  (installs the DSL scoring step's model loader)
    _system,  # noqa: F401  (installs the resolver of system components)
)
from ._acking import XorTracker

__all__ = ["XorTracker", "key_hash"]
