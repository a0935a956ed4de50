"""heronpy's ``Stream`` and ``Grouping``, mapped onto the native ones."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from headwater.common.api import _stream as native


class Stream(native.Stream):
    """``Stream(fields=None, name="default", direct=False)`` as in heronpy."""

    DEFAULT_STREAM_ID = native.DEFAULT_STREAM

    def __init__(
        self,
        fields: Sequence[str] | None = None,
        name: str = native.DEFAULT_STREAM,
        direct: bool = False,
    ) -> None:
        if name is None or not isinstance(name, str):
            raise TypeError("Stream's name must be a str")
        if fields is None:
            fields = []
        if not isinstance(fields, list | tuple) or not all(isinstance(f, str) for f in fields):
            raise TypeError(f"Stream fields must be a list of str, got {fields!r}")
        if not isinstance(direct, bool):
            raise TypeError("'direct' must be a bool")
        super().__init__(tuple(fields), name, direct)

    @property
    def stream_id(self) -> str:
        return self.name


class Grouping:
    """Grouping constants and constructors, as in heronpy."""

    SHUFFLE = native.shuffle()
    ALL = native.all_tasks()
    LOWEST = native.global_()
    GLOBAL = LOWEST
    NONE = native.none()
    DIRECT = native.direct()
    LOCAL_OR_SHUFFLE = SHUFFLE

    @classmethod
    def is_grouping_sane(cls, gtype: object) -> bool:
        return isinstance(gtype, native.Grouping)

    @classmethod
    def fields(cls, *fields: str | list[str]) -> native.Grouping:
        names: Sequence[object] = fields
        if len(fields) == 1 and isinstance(fields[0], list):
            names = fields[0]
        if not names:
            raise ValueError("fields grouping needs at least one field")
        if not all(isinstance(f, str) for f in names):
            raise TypeError("Non-string cannot be specified in fields")
        return native.fields(*[str(f) for f in names])

    @classmethod
    def custom(cls, customgrouper: object) -> native.Grouping:
        if isinstance(customgrouper, str):
            module, _, name = customgrouper.rpartition(".")
            customgrouper = getattr(importlib.import_module(module), name)()
        if not isinstance(customgrouper, native.CustomGrouping):
            raise TypeError(
                "custom grouping needs an object with prepare(context, component, stream, "
                "target_tasks) and choose_tasks(values), or its class path as a str"
            )
        return native.custom(customgrouper)
