"""``TestSource`` and ``TestSink``: a spout over a list and a bolt that fills one.

>>> from functools import partial
>>> from headwater import Topology, shuffle
>>> out: list = []
>>> t = (Topology("t").add_spout("src", partial(TestSource, ["a", "b"]), outputs=("word",))
...      .add_bolt("sink", partial(TestSink, out), inputs={"src": shuffle()}))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from headwater.common.api import Bolt, Context, Spout, Tuple


class TestSource(Spout):
    """Emits ``items`` once, ``batch`` per ``next_tuple`` call, and is then exhausted.

    An item that is a tuple or a list is one tuple's values; anything else is a
    one-field tuple. Task ``i`` of ``n`` emits the items whose index is ``i``
    modulo ``n``, in order. Each is emitted with its index as ``tup_id``: under
    at-least-once a failed one is emitted again (the indexes acked and failed are
    in ``acked`` and ``failed``). Declare the fields with ``outputs=`` where the
    topology adds it: a ``partial`` hides the class's own (one field, ``value``).
    """

    __test__ = False  # not a pytest test class
    outputs = ("value",)

    def __init__(self, items: Iterable[Any], *, batch: int = 1) -> None:
        self.items = list(items)
        self.batch = batch
        self.acked: list[int] = []
        self.failed: list[int] = []

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        n = len(ctx.component_tasks(ctx.component)) or 1
        self.todo = list(range(ctx.component_index, len(self.items), n))
        self.todo.reverse()  # popped from the end: in order

    def exhausted(self) -> bool:
        return not self.todo

    def next_tuple(self) -> None:
        for _ in range(self.batch):
            if not self.todo:
                return
            i = self.todo.pop()
            item = self.items[i]
            values = list(item) if isinstance(item, tuple | list) else [item]
            self.ctx.emit(values, tup_id=i)

    def on_ack(self, tup_id: Any) -> None:
        self.acked.append(tup_id)

    def on_fail(self, tup_id: Any) -> None:
        self.failed.append(tup_id)
        self.todo.append(tup_id)  # replayed next


class TestSink(Bolt):
    """Appends the values of every tuple it gets to ``out`` (a list the test holds),
    and acks it. Several tasks of one sink share the list."""

    __test__ = False  # not a pytest test class

    def __init__(self, out: list[Any]) -> None:
        self.out = out

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.out.append(list(tup.values))
        self.ctx.ack(tup)
