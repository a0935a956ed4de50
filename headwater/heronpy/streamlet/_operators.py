"""The pieces of the streamlet API that user code implements, and what it is handed.

``Generator`` (a source) and ``TransformOperator`` (a step), which a user
subclasses; ``StreamletContext`` (heronpy's ``Context``), which their
``setup`` is given; ``ArrayLooper``, heronpy's mock source. They sit apart
from ``_api.py`` (``Builder``, ``Streamlet``, ...) because the translation
onto the DSL (``_translate.py``) runs them, and ``_api.py`` calls the
translation: this module imports neither.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from headwater.common.api import Context


class Generator:
    """A source: ``setup(context)`` once, then ``get()`` for each element (None: nothing now)."""

    def setup(self, context: Any) -> None:
        raise NotImplementedError("Generator not implementing setup() method.")

    def get(self) -> Any:
        raise NotImplementedError("Generator not implementing get() method.")


class TransformOperator:
    """``setup(context)`` once; ``transform(tup)`` per element, emitting with ``context.emit``."""

    def setup(self, context: Any) -> None:
        raise NotImplementedError("TransformOperator not implementing setup() method.")

    def transform(self, tup: Any) -> None:
        raise NotImplementedError("TransformOperator not implementing transform() method.")


class StreamletContext:
    """What generators and transform operators see (heronpy's ``Context``)."""

    def __init__(self, ctx: Context, emit: Callable[[Any], None] | None = None) -> None:
        self._ctx, self._emit = ctx, emit

    def get_task_id(self) -> int:
        return self._ctx.task_id

    def get_config(self) -> Any:
        return self._ctx.config

    def get_stream_name(self) -> str:
        return self._ctx.component

    def get_num_partitions(self) -> int:
        return len(self._ctx.component_tasks(self._ctx.component))

    def get_partition_index(self) -> int:
        return self._ctx.component_index

    def get_state(self) -> Any:
        return self._ctx.state

    def emit(self, values: Any) -> None:
        if self._emit is None:
            raise RuntimeError("emit() is for transform operators")
        self._emit(values)


class ArrayLooper(Generator):
    """heronpy's mock source: loops over ``user_iterable`` forever (``sleep`` s between)."""

    def __init__(self, user_iterable: Iterable[Any], sleep: float | None = None) -> None:
        self._items = list(user_iterable)
        self._sleep = sleep

    def setup(self, context: Any) -> None:
        self._i = 0

    def get(self) -> Any:
        if self._sleep:
            time.sleep(self._sleep)
        item = self._items[self._i % len(self._items)]
        self._i += 1
        return item
