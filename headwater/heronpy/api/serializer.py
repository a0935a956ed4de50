"""heronpy's serializer interface (``heronpy.api.serializer``).

Headwater encodes tuples with its own wire codec (msgpack with the types in
``headwater.common.wire``), so ``topology.serializer.classname`` is not read; these
classes exist for code that serializes values itself (``default_serializer``).
"""

from __future__ import annotations

import pickle
from typing import Any


class IHeronSerializer:
    def initialize(self, config: Any = None) -> None:
        raise NotImplementedError

    def serialize(self, obj: Any) -> bytes:
        raise NotImplementedError

    def deserialize(self, input_str: bytes) -> Any:
        raise NotImplementedError


class PythonSerializer(IHeronSerializer):
    """Pickle, as heronpy's default (which uses cloudpickle to write)."""

    def initialize(self, config: Any = None) -> None:
        pass

    def serialize(self, obj: Any) -> bytes:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)

    def deserialize(self, input_str: bytes) -> Any:
        return pickle.loads(input_str)  # heronpy's contract: input it serialized itself


default_serializer = PythonSerializer()

__all__ = ["IHeronSerializer", "PythonSerializer", "default_serializer"]
