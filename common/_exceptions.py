"""Headwater's exceptions: one root, and the tree below it.

HeadwaterError
 +-- InvalidTopologyError      the topology cannot run as written (raised before
 |                             any process starts); lists every problem found
 +-- TopologyLoadError         a topology file could not be loaded
 +-- SerializationError        an emitted value the wire codec cannot encode
 |    +-- DecodeError          bytes the wire codec cannot decode (defined in
 |                             headwater.common.wire; a ValueError too)
 +-- EmitError                 an emit that names an unknown stream or task
 +-- ClusterError              a local cluster failed to start or stop
 |    +-- CrashLoopError       a component or process of it keeps failing
 +-- PackageMismatchError      topology code whose hash is not the one expected
 +-- DeadLetter                raised by user code on a record: send it to the dead
 |                             letters at once, with this reason (no retries)
 +-- CorruptCheckpointError    a stored snapshot fails its checksum or is missing
 |                             (defined in headwater.common.state)
 +-- LogOffsetError            a reader's offset past a durable log's end: the log
 |                             went back (defined in headwater.common.state)
 +-- PortInUse                 a port a daemon must listen on is taken; names who
                               holds it (defined in headwater.common._ports)

Outside the tree, a ``BaseException`` as ``KeyboardInterrupt`` is, so that no
``except Exception`` on its way (in Headwater, PySpark or Py4J) takes it for an error:

StartupStopped                 a stop (SIGINT, SIGTERM) that came while a command
                               started; what had started is stopped
"""

from __future__ import annotations

from collections.abc import Sequence


class HeadwaterError(Exception):
    """Root of every error Headwater raises on purpose."""


class InvalidTopologyError(HeadwaterError):
    """The topology cannot run; ``problems`` holds one message per defect."""

    def __init__(self, topology: str, problems: Sequence[str]) -> None:
        self.topology = topology
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"topology {topology!r} is invalid:\n{lines}")


class TopologyLoadError(HeadwaterError):
    """A topology file could not be loaded or does not define exactly one topology."""


class SerializationError(HeadwaterError):
    """A value handed to ``emit`` cannot be encoded by the wire codec."""


class EmitError(HeadwaterError):
    """An ``emit`` named a stream the component does not declare, or a bad direct task."""


class ClusterError(HeadwaterError):
    """A local cluster could not be started, or one of its processes failed to come up."""


class CrashLoopError(ClusterError):
    """Something in a local cluster keeps failing however often it is restarted."""


class PackageMismatchError(HeadwaterError):
    """A topology package's content does not hash to the expected value: refused."""


class PackageRefusedError(HeadwaterError):
    """A topology package that is not one, or is too big to take (``too_large``): refused."""

    def __init__(self, message: str, *, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


class DeadLetter(HeadwaterError):
    """Raise it in a bolt's ``process`` or a DSL step to dead-letter the record at once.

    The record goes to the topology's dead letters with ``str(exc)`` as its reason and
    no traceback, without the retries another exception gets; processing goes on.

    >>> def parse(payload: bytes) -> dict[str, object]:
    ...     if not payload.startswith(b"{"):
    ...         raise DeadLetter("a reading must be a JSON object")
    ...     return {}
    """


class StartupStopped(BaseException):
    """Raised, from a signal handler, in what a command was starting when a stop came
    (Ctrl-C or SIGTERM during ``headwater run``'s start-up, or while Spark starts).

    The command stops what had started and says so in one line; ``signum`` is the
    signal (the exit status is ``128 + signum`` where the command has no other)."""

    def __init__(self, signum: int, what: str = "start-up") -> None:
        super().__init__(f"stopped during {what}")
        self.signum = signum
