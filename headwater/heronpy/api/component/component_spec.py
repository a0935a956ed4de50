"""heronpy's ``HeronComponentSpec`` and ``GlobalStreamId``.

A spec names its component's class by ``python_class_path`` (a dotted path, as
in heronpy; a class is taken too). ``get_protobuf()`` describes the component with
the shape of Heron's ``Spout`` / ``Bolt`` messages (``comp.name``,
``comp.class_name``, ``comp.config.kvs``, ``inputs[i].stream.component_name``,
``inputs[i].gtype``, ``outputs[i].stream.id``, ``outputs[i].schema.keys``) as plain
objects: Headwater runs no Heron protobufs.
"""

from __future__ import annotations

import importlib
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.common.api import ComponentSpec, Input
from headwater.common.api import _stream as native

from ..api_constants import TOPOLOGY_COMPONENT_PARALLELISM
from ..stream import Grouping, Stream


class GlobalStreamId:
    """A (component, stream) pair; ``spec['error']`` makes one."""

    def __init__(self, componentId: Any, streamId: str) -> None:
        if not isinstance(componentId, str | HeronComponentSpec):
            raise TypeError("componentId must be a str or a HeronComponentSpec")
        if not isinstance(streamId, str):
            raise TypeError("streamId must be a str")
        self._component = componentId
        self.stream_id = streamId

    @property
    def component_id(self) -> str:
        c = self._component
        if isinstance(c, HeronComponentSpec):
            return c.name or f"<No name available for HeronComponentSpec yet, uuid: {c.uuid}>"
        return c

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GlobalStreamId)
            and self.component_id == other.component_id
            and self.stream_id == other.stream_id
        )

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        return f"{self.component_id}:{self.stream_id}"


# -- get_protobuf(): Heron's message shapes as plain objects ---------------------------------
@dataclass
class StreamId:
    id: str
    component_name: str


@dataclass
class KeyValue:
    key: str
    value: Any


@dataclass
class Config:
    kvs: list[KeyValue] = field(default_factory=list)


@dataclass
class Component:
    name: str
    class_name: str
    config: Config


@dataclass
class StreamSchema:
    keys: list[KeyValue] = field(default_factory=list)


@dataclass
class InputStream:
    stream: StreamId
    gtype: native.Grouping
    grouping_fields: StreamSchema


@dataclass
class OutputStream:
    stream: StreamId
    schema: StreamSchema


@dataclass
class ComponentMessage:
    """Heron's ``Spout`` (no ``inputs``) or ``Bolt`` message."""

    comp: Component
    inputs: list[InputStream]
    outputs: list[OutputStream]


def _resolve(path: str) -> type | None:
    """The class at ``path`` (``module.Qual.Name``), or None while it cannot be imported."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name, qualname = ".".join(parts[:cut]), ".".join(parts[cut:])
        try:
            obj: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
            for attr in qualname.split("."):
                obj = getattr(obj, attr)
        except (ImportError, AttributeError):
            continue
        return obj if isinstance(obj, type) else None
    return None


class _SourceNamedGrouping:
    """Hands a heronpy custom grouping the name of the component it routes from.

    The runtime's ``prepare`` names the consumer; heronpy's names the source."""

    def __init__(self, grouping: native.CustomGrouping, source: str) -> None:
        self.grouping, self.source = grouping, source

    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None:
        from ..topology_context import TopologyContext

        topology = getattr(context, "topology", None)
        heron_context = TopologyContext(context, topology) if topology is not None else context  # type: ignore[arg-type]
        self.grouping.prepare(heron_context, self.source, stream, target_tasks)

    def choose_tasks(self, values: list[object]) -> list[int]:
        return self.grouping.choose_tasks(values)


class HeronComponentSpec:
    """A component declaration, named later by its Topology attribute or builder."""

    def __init__(
        self,
        name: str | None,
        python_class_path: str | type,
        is_spout: bool,
        par: int,
        inputs: Any = None,
        outputs: Sequence[Stream | str] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError("component name must be a str")
        if not isinstance(is_spout, bool):
            raise TypeError("is_spout must be a bool")
        if not isinstance(par, int) or isinstance(par, bool) or par <= 0:
            raise ValueError(f"parallelism must be a positive int, got {par!r}")
        self._cls: type | None
        if isinstance(python_class_path, type):
            self._cls = python_class_path
            python_class_path = f"{self._cls.__module__}.{self._cls.__qualname__}"
        elif isinstance(python_class_path, str) and python_class_path:
            self._cls = _resolve(python_class_path)  # now, while a running file is __main__
        else:
            raise TypeError("python_class_path must be a dotted class path (or a class)")
        self.name = name
        self.python_class_path = python_class_path
        self.is_spout = is_spout
        self.parallelism = par
        self.inputs = inputs
        self.outputs = outputs if outputs is not None else []
        self.custom_config: dict[str, Any] = dict(config or {})
        self.uuid = str(uuid.uuid4())

    @property
    def cls(self) -> type:
        """The component's class (imported from ``python_class_path`` when first needed)."""
        if self._cls is None:
            self._cls = _resolve(self.python_class_path)
            if self._cls is None:
                raise ImportError(
                    f"component {self.name!r}: cannot import class {self.python_class_path!r}"
                )
        return self._cls

    def __getitem__(self, stream_id: str) -> GlobalStreamId:
        if stream_id not in self.get_out_streamids():
            raise ValueError(f"{self.name or self.uuid} does not declare stream {stream_id!r}")
        return GlobalStreamId(self, stream_id)

    def get_out_streamids(self) -> set[str]:
        return {s.name for s in native.as_streams(list(self.outputs))}

    # -- Heron's description -----------------------------------------------------------
    def get_protobuf(self) -> ComponentMessage:
        """This component as Heron's ``Spout`` or ``Bolt`` message (plain objects)."""
        if self.name is None:
            raise RuntimeError("get_protobuf() needs the spec's name (set when it is added)")
        kvs = [KeyValue(TOPOLOGY_COMPONENT_PARALLELISM, str(self.parallelism))]
        kvs += [KeyValue(k, _heron_value(v)) for k, v in dict(self.custom_config or {}).items()]
        comp = Component(self.name, self.python_class_path, Config(kvs))
        outputs = [
            OutputStream(
                StreamId(s.name, self.name), StreamSchema([KeyValue(f, "OBJECT") for f in s.fields])
            )
            for s in native.as_streams(list(self.outputs))
        ]
        inputs = [
            InputStream(
                StreamId(i.stream, i.component),
                i.grouping,
                StreamSchema([KeyValue(f, "OBJECT") for f in i.grouping.fields]),
            )
            for i in self._native_inputs()
        ]
        return ComponentMessage(comp, [] if self.is_spout else inputs, outputs)

    # -- to Headwater --------------------------------------------------------------------
    def to_native(self) -> ComponentSpec:
        assert self.name is not None
        return ComponentSpec(
            name=self.name,
            kind="spout" if self.is_spout else "bolt",
            factory=self.cls,
            parallelism=self.parallelism,
            inputs=self._native_inputs(),
            outputs=native.as_streams(list(self.outputs)),
            config=dict(self.custom_config or {}),
        )

    def _native_inputs(self) -> tuple[Input, ...]:
        if self.inputs is None:
            return ()
        if isinstance(self.inputs, Mapping):
            items = list(self.inputs.items())
        elif isinstance(self.inputs, list | tuple):
            items = [(i, Grouping.SHUFFLE) for i in self.inputs]
        else:
            raise TypeError(f"inputs of {self.name!r} must be a dict, list or tuple")
        out = []
        for key, given in items:
            grouping = given
            if not Grouping.is_grouping_sane(grouping):
                raise ValueError(f"{self.name!r}: a given grouping is not supported: {grouping!r}")
            if isinstance(key, HeronComponentSpec):
                source, stream = key.name or key.uuid, native.DEFAULT_STREAM
            elif isinstance(key, GlobalStreamId):
                source, stream = key.component_id, key.stream_id
            elif isinstance(key, str):
                source, stream = key, native.DEFAULT_STREAM
            else:
                raise ValueError(f"{self.name!r}: unsupported input key {key!r}")
            if grouping.kind == "custom" and grouping.custom is not None:
                grouping = native.custom(_SourceNamedGrouping(grouping.custom, source))
            out.append(Input(source, stream, grouping))
        return tuple(out)


def _heron_value(value: Any) -> Any:
    """heronpy's config sanitising: bools as "true"/"false", numbers as str, others as is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return value
