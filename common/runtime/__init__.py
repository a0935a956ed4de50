"""The runtime: stream manager, instances, acking and backpressure.

Kept import-light: instance processes import this package and must not pay
for gRPC. Import ``_stmgr`` directly where a stream manager is needed.
"""

from . import _system  # noqa: F401  (installs the resolver of system components)
from ._acking import XorTracker
from ._routing import key_hash

__all__ = ["XorTracker", "key_hash"]
