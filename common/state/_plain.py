"""Reading snapshots in a process that must never run a topology's code.

A snapshot is a pickle of what an instance keeps in its state, and unpickling
can call any function the bytes name (``os.system`` in a ``__reduce__``) or
import the topology's own modules. Where a node runs a topology's code as a
user of its own (common/_sandbox.py), its container process keeps the node's
identity, folds the instances' snapshots in its checkpoint store and splits
them for a rescale, so it reads them with ``plain_loads``: plain values only,
the builtins and a few harmless classes of the standard library
(``PLAIN_CLASSES``). Anything else is refused with ``PlainStateError``, which
says what the state held, and the checkpoint fails rather than run it.
``refuse_code`` turns this on for the whole process (the container calls it at
start when it runs as the node, its code as another user).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from typing import Any

from .._exceptions import HeadwaterError

PLAIN_CLASSES = frozenset(
    {
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("builtins", "int"),
        ("builtins", "float"),
        ("builtins", "str"),
        ("builtins", "list"),
        ("builtins", "dict"),
        ("builtins", "tuple"),
        ("collections", "Counter"),
        ("collections", "OrderedDict"),
        ("collections", "defaultdict"),
        ("collections", "deque"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("decimal", "Decimal"),
        ("fractions", "Fraction"),
        ("uuid", "UUID"),
    }
)
"""(module, name) of the classes a plain snapshot may hold: building one from any arguments
runs no code of anyone's (a ``defaultdict``'s factory must be one of them too)."""


class PlainStateError(HeadwaterError):
    """A snapshot holds a value this process may not build (it would run code)."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in PLAIN_CLASSES:
            return super().find_class(module, name)
        raise PlainStateError(
            f"a snapshot holds a {module}.{name}: where a node runs a topology's code as a "
            "user of its own, checkpointed state holds plain values (builtins, collections, "
            "datetime, decimal, fractions, uuid), which its container can read without "
            "running code; keep others as plain values, or run the node with --isolation none"
        )


def plain_loads(blob: bytes) -> Any:
    """``pickle.loads`` for plain values only; PlainStateError for anything else."""
    return _PlainUnpickler(io.BytesIO(blob)).load()


_loads: Callable[[bytes], Any] = pickle.loads


def loads(blob: bytes) -> Any:
    """How this process reads snapshots: ``pickle.loads``, or ``plain_loads`` once
    ``refuse_code`` was called."""
    return _loads(blob)


def refuse_code() -> None:
    """From now on this process reads snapshots as plain values only (``plain_loads``)."""
    global _loads
    _loads = plain_loads
