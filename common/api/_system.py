"""System components: components the plan or the DSL names and the runtime builds.

The plan adds components of its own to a topology (an edge subgraph's outbox
sink, the cloud's uplink receiver) and the DSL offers a source the runtime
implements (the durable log). Layers point down only, so neither may import the
runtime's classes: they describe the component as data instead, a
``SystemComponent`` (a kind and its parameters), which serves as the factory of
its ``ComponentSpec``. The runtime knows the classes: importing
``headwater.common.runtime`` installs its resolver (``runtime/_system.py``),
and from then on calling the spec builds the component, as any factory would.
Every process that runs components (an instance) has the runtime imported.

>>> spec = system_component("outbox_sink", Bolt, component="model")
>>> spec.kind, dict(spec.params)
('outbox_sink', {'component': 'model'})
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._component import Bolt, Spout

C = TypeVar("C", Spout, Bolt)


@dataclass(frozen=True)
class SystemComponent(Generic[C]):
    """A component named by kind, with the keyword arguments its class takes.

    ``role`` (``Spout`` or ``Bolt``) types the factory and is checked when it builds.
    """

    kind: str
    role: type[C]
    params: tuple[tuple[str, Any], ...] = ()

    def __call__(self) -> C:
        """Build the component (in a process that has imported the runtime)."""
        if _resolver is None:
            raise RuntimeError(
                f"system component {self.kind!r} built before the runtime was imported: "
                "import headwater.common.runtime first"
            )
        built = _resolver(self)
        if not isinstance(built, self.role):
            raise TypeError(f"system component {self.kind!r} is not a {self.role.__name__}")
        return built


def system_component(kind: str, role: type[C], **params: Any) -> SystemComponent[C]:
    """The spec of the ``kind`` component built with ``params`` (a factory for ``add_*``)."""
    return SystemComponent(kind, role, tuple(sorted(params.items())))


Resolver = Callable[[SystemComponent[Any]], Spout | Bolt]
_resolver: Resolver | None = None


def install_resolver(resolver: Resolver) -> None:
    """Called once by the runtime when it is imported: how kinds become components."""
    global _resolver
    _resolver = resolver
