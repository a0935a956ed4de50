"""heronpy's ``Topology`` (class style with ``spec()``) and ``TopologyBuilder``.

Both build a native ``headwater.Topology``. ``build_and_submit()`` hands it to
Headwater's loader (``headwater run FILE``) instead of writing a Heron
topology definition, so no ``HERON_OPTIONS`` is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.common.api import Topology as NativeTopology
from headwater.common.api import _submit

from .api_constants import (
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_RELIABILITY_MODE,
)
from .component.component_spec import HeronComponentSpec

# heronpy's defaults that change behaviour (topology.stmgrs is --containers here)
DEFAULT_TOPOLOGY_CONFIG: dict[str, Any] = {
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30,
    TOPOLOGY_MAX_SPOUT_PENDING: 100,
    TOPOLOGY_RELIABILITY_MODE: "ATMOST_ONCE",
}


def _native(
    name: str, specs: list[HeronComponentSpec], config: Mapping[str, Any]
) -> NativeTopology:
    topo = NativeTopology(name, config={**DEFAULT_TOPOLOGY_CONFIG, **config})
    for spec in specs:
        topo = topo.add(spec.to_native())
    return topo


class TopologyType(type):
    """Collects the ``HeronComponentSpec`` attributes of a Topology subclass, in order."""

    def __new__(mcs, classname: str, bases: tuple[type, ...], class_dict: dict[str, Any]) -> Any:
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
        return cls


class Topology(metaclass=TopologyType):
    """Subclass it and declare components as class attributes made with ``spec()``."""

    @classmethod
    def __headwater_topology__(cls) -> NativeTopology | None:
        if cls is Topology or not cls._heron_specs:  # type: ignore[attr-defined]
            return None
        return _native(cls.__name__, cls._heron_specs, cls._topo_config)  # type: ignore[attr-defined]


class TopologyBuilder:
    """Build a topology imperatively; ``build_and_submit()`` under ``__main__``."""

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or name == "Topology":
            raise ValueError("topology name must be a str other than 'Topology'")
        self.topology_name = name
        self._specs: dict[str, HeronComponentSpec] = {}
        self._topology_config: dict[str, Any] = {}

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

    def __headwater_topology__(self) -> NativeTopology:
        return _native(self.topology_name, list(self._specs.values()), self._topology_config)

    def build_and_submit(self) -> None:
        _submit.submit(self.__headwater_topology__())
