"""heronpy's ``HeronComponentSpec`` and ``GlobalStreamId``."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.common.api import ComponentSpec, Input
from headwater.common.api import _stream as native

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


class HeronComponentSpec:
    """A component declaration, named later by its Topology attribute or builder."""

    def __init__(
        self,
        name: str | None,
        cls: type,
        is_spout: bool,
        par: int,
        inputs: Any = None,
        outputs: Sequence[Stream | str] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError("component name must be a str")
        if not isinstance(par, int) or par <= 0:
            raise ValueError(f"parallelism must be a positive int, got {par!r}")
        self.name = name
        self.cls = cls
        self.python_class_path = f"{cls.__module__}.{cls.__qualname__}"
        self.is_spout = is_spout
        self.parallelism = par
        self.inputs = inputs
        self.outputs = list(outputs or [])
        self.custom_config = dict(config or {})
        self.uuid = str(uuid.uuid4())

    def __getitem__(self, stream_id: str) -> GlobalStreamId:
        if stream_id not in self.get_out_streamids():
            raise ValueError(f"{self.name or self.uuid} does not declare stream {stream_id!r}")
        return GlobalStreamId(self, stream_id)

    def get_out_streamids(self) -> set[str]:
        return {s.name for s in native.as_streams(self.outputs)}

    def to_native(self) -> ComponentSpec:
        assert self.name is not None
        return ComponentSpec(
            name=self.name,
            kind="spout" if self.is_spout else "bolt",
            factory=self.cls,
            parallelism=self.parallelism,
            inputs=self._native_inputs(),
            outputs=native.as_streams(self.outputs),
            config=dict(self.custom_config),
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
        for key, grouping in items:
            if not Grouping.is_grouping_sane(grouping):
                raise ValueError(f"{self.name!r}: a given grouping is not supported: {grouping!r}")
            if isinstance(key, HeronComponentSpec):
                out.append(Input(key.name or key.uuid, native.DEFAULT_STREAM, grouping))
            elif isinstance(key, GlobalStreamId):
                out.append(Input(key.component_id, key.stream_id, grouping))
            elif isinstance(key, str):
                out.append(Input(key, native.DEFAULT_STREAM, grouping))
            else:
                raise ValueError(f"{self.name!r}: unsupported input key {key!r}")
        return tuple(out)
