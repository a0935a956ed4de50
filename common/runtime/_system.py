"""The runtime's registry of system components: each kind the plan or the DSL names, and
the class that implements it (see ``api/_system.py``).

The classes are imported on first use, so that the instance processes that import
this module (all of them, through ``headwater.common.runtime``) stay light.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..api import Bolt, Spout
from ..api._system import SystemComponent, install_resolver


def _outbox_sink(component: str) -> Bolt:
    from ._outbox_sink import OutboxSink

    return OutboxSink(component)


def _uplink_receiver(component: str) -> Spout:
    from ._receiver import UplinkSpout

    return UplinkSpout(component)


def _handover(component: str, inner: Any) -> Bolt:
    from ._handover_bolt import handover

    return handover(component, inner)


def _log_spout(path: str, partitions: int) -> Spout:
    from ..connectors import LogSpout

    return LogSpout(path, partitions)


KINDS: dict[str, Callable[..., Spout | Bolt]] = {
    "outbox_sink": _outbox_sink,
    "uplink_receiver": _uplink_receiver,
    "log_spout": _log_spout,
    "handover": _handover,
}


def resolve(spec: SystemComponent[Any]) -> Spout | Bolt:
    """The component ``spec`` names, built with its parameters."""
    build = KINDS.get(spec.kind)
    if build is None:
        raise ValueError(
            f"unknown system component {spec.kind!r}: this runtime knows {sorted(KINDS)}"
        )
    return build(**dict(spec.params))


install_resolver(resolve)
