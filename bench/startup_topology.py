"""The word count example (``examples/iot/wordcount.py``), unchanged, that also says when it
processed its first tuple: the first ``count`` task to process a word writes the wall-clock
time into ``$STARTUP_FIRST_TUPLE`` (created exclusively: the first one wins). For
``python -m bench startup``; it only reads the example, so it runs on any revision of it.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from headwater import Topology

FIRST_TUPLE_ENV = "STARTUP_FIRST_TUPLE"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "iot" / "wordcount.py"

_spec = importlib.util.spec_from_file_location("_startup_wordcount", EXAMPLE)
assert _spec is not None and _spec.loader is not None
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
_count_process = _example.Count.process
_seen = [False]


def _process(self: Any, tup: Any) -> None:
    if not _seen[0]:
        _seen[0] = True
        _mark_first_tuple()
    _count_process(self, tup)


def _mark_first_tuple() -> None:
    path = os.environ.get(FIRST_TUPLE_ENV)
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another count task was first
    with os.fdopen(fd, "w") as f:
        f.write(f"{time.time():.6f}\n")


_example.Count.process = _process
topology: Topology = _example.topology
