"""A tap: a bolt that counts what it sees and keeps the last few records, changing nothing.

The console's palette offers it on any topology (``headwater_attached.json``'s step
``"tap"``): attached to a component's stream, it shows in that component's metrics what
flows there (its ``executed`` count, and the user counter ``tapped``) without a sink or a
file of its own.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..api import Bolt, Context, Tuple


class Tap(Bolt):
    """Counts every record (``tapped``) and keeps the last ``keep`` in memory."""

    def __init__(self, keep: int = 20) -> None:
        self.last: deque[list[Any]] = deque(maxlen=keep)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.last.append(list(tup.values))
        self.ctx.incr("tapped")
