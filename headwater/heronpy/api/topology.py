"""heronpy's ``Topology`` (class style with ``spec()``) and ``TopologyBuilder``.

Both build a native ``headwater.Topology``. ``build_and_submit()`` hands it to
Headwater's loader (``headwater run FILE``) instead of writing a Heron
topology definition, so no ``HERON_OPTIONS`` is needed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.common.api import ComponentSpec, _submit
from headwater.common.api import Topology as NativeTopology

from .api_constants import (
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_RELIABILITY_MODE,
)
from .component.component_spec import HeronComponentSpec

_NATIVE_PARTS = "_headwater_components"  # class-dict key: components made natively

# heronpy's defaults that change behaviour (topology.stmgrs is --containers here)
DEFAULT_TOPOLOGY_CONFIG: dict[str, Any] = {
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30,
    TOPOLOGY_MAX_SPOUT_PENDING: 100,
    TOPOLOGY_RELIABILITY_MODE: "ATMOST_ONCE",
}


def _native(
    name: str,
    specs: list[HeronComponentSpec],
    config: Mapping[str, Any],
    parts: Sequence[ComponentSpec] = (),
) -> NativeTopology:
    topo = NativeTopology(name, config={**DEFAULT_TOPOLOGY_CONFIG, **config})
    for spec in specs:
        topo = topo.add(spec.to_native())
    for comp in parts:
        topo = topo.add(comp)
    return topo


class TopologyType(type):
    """Collects the ``HeronComponentSpec`` attributes of a Topology subclass, in order.

    A class made by calling ``TopologyType(name, (Topology,), class_dict)`` (as heronpy's
    ``TopologyBuilder`` and Heron's integration-test core do) belongs to the module that
    made it, as a ``class`` statement there would; ``write()`` hands it to the loader
    from any module.
    """

    def __new__(mcs, classname: str, bases: tuple[type, ...], class_dict: dict[str, Any]) -> Any:
        if "__module__" not in class_dict:
            caller = sys._getframe(1).f_globals.get("__name__")
            if isinstance(caller, str):
                class_dict = {"__module__": caller, **class_dict}
        specs: list[HeronComponentSpec] = []
        for attr, value in class_dict.items():
            if isinstance(value, HeronComponentSpec):
                if value.name is None:
                    value.name = attr
                if any(s.name == value.name for s in specs):
                    raise ValueError(f"Duplicate component name: {value.name}")
                specs.append(value)
        cls = super().__new__(mcs, classname, bases, class_dict)
        cls._heron_specs = specs  # type: ignore[attr-defined]
        config = class_dict.get("config")
        cls._topo_config = dict(config) if isinstance(config, dict) else {}  # type: ignore[attr-defined]
        cls._native_parts = tuple(class_dict.get(_NATIVE_PARTS, ()))  # type: ignore[attr-defined]
        cls.topology_name = classname  # type: ignore[attr-defined]
        return cls


class Topology(metaclass=TopologyType):
    """Subclass it and declare components as class attributes made with ``spec()``."""

    @classmethod
    def __headwater_topology__(cls) -> NativeTopology | None:
        specs, parts = cls._heron_specs, cls._native_parts  # type: ignore[attr-defined]
        if cls is Topology or not (specs or parts):
            return None
        return _native(cls.__name__, specs, cls._topo_config, parts)  # type: ignore[attr-defined]

    @classmethod
    def write(cls) -> None:
        """heronpy writes the topology's definition for the submitter; here it hands the
        topology to Headwater's loader running the file (``headwater run FILE``)."""
        topology = cls.__headwater_topology__()
        if topology is None:
            raise ValueError(
                "the base Topology class (or one without components) cannot be written"
            )
        _submit.submit(topology)


class TopologyBuilder:
    """Build a topology imperatively; ``build_and_submit()`` under ``__main__``."""

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or name == "Topology":
            raise ValueError("topology name must be a str other than 'Topology'")
        self.topology_name = name
        self._specs: dict[str, HeronComponentSpec] = {}
        self._topology_config: dict[str, Any] = {}
        self._native_parts: list[ComponentSpec] = []  # a streamlet graph's (Builder.build)

    def _add_native(self, topology: NativeTopology) -> None:
        """Add the components of a native topology (a streamlet graph built into this)."""
        taken = set(self._specs) | {c.name for c in self._native_parts}
        for comp in topology.components:
            if comp.name in taken:
                raise ValueError(f"Duplicate component name: {comp.name}")
            self._native_parts.append(comp)

    def add_spec(self, *specs: HeronComponentSpec) -> None:
        for spec in specs:
            if not isinstance(spec, HeronComponentSpec):
                raise TypeError(f"add_spec takes HeronComponentSpec objects, got {spec!r}")
            if spec.name is None:
                raise ValueError("TopologyBuilder cannot take a spec without name")
            if spec.name == "config":
                raise ValueError("config is a reserved name")
            if spec.name in self._specs:
                raise ValueError(f"Duplicate component name: {spec.name}")
            self._specs[spec.name] = spec

    def add_spout(
        self, name: str, spout_cls: Any, par: int, config: Any = None, optional_outputs: Any = None
    ) -> HeronComponentSpec:
        spec: HeronComponentSpec = spout_cls.spec(
            name=name, par=par, config=config, optional_outputs=optional_outputs
        )
        self.add_spec(spec)
        return spec

    def add_bolt(
        self,
        name: str,
        bolt_cls: Any,
        par: int,
        inputs: Any,
        config: Any = None,
        optional_outputs: Any = None,
    ) -> HeronComponentSpec:
        spec: HeronComponentSpec = bolt_cls.spec(
            name=name, inputs=inputs, par=par, config=config, optional_outputs=optional_outputs
        )
        self.add_spec(spec)
        return spec

    def set_config(self, config: dict[str, Any]) -> None:
        if not isinstance(config, dict):
            raise TypeError("topology config must be a dict")
        self._topology_config = dict(config)

    def _construct_topo_class_dict(self) -> dict[str, Any]:
        """The class dict of this topology's ``Topology`` subclass (specs and ``config``)."""
        class_dict: dict[str, Any] = dict(self._specs)
        class_dict["config"] = self._topology_config
        if self._native_parts:
            class_dict[_NATIVE_PARTS] = tuple(self._native_parts)
        return class_dict

    def __headwater_topology__(self) -> NativeTopology:
        return _native(
            self.topology_name,
            list(self._specs.values()),
            self._topology_config,
            self._native_parts,
        )

    def build_and_submit(self) -> None:
        """Make the ``Topology`` subclass and ``write()`` it, as heronpy does."""
        topo_cls = TopologyType(self.topology_name, (Topology,), self._construct_topo_class_dict())
        topo_cls.write()
