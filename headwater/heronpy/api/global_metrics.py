"""heronpy's process-wide counters (``heronpy.api.global_metrics``).

Each instance runs in its own process, so these counters belong to one task;
they are reported with the task's metrics as ``user:<key>``.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

metricsContainer: Counter[str] = Counter()
lock = threading.Lock()
_ctx: Any = None  # the running component's context, set when it opens


def incr(key: str, to_add: int = 1) -> None:
    metricsContainer[key] += to_add
    if _ctx is not None:
        _ctx.incr(key, to_add)


def safe_incr(key: str, to_add: int = 1) -> None:
    with lock:
        incr(key, to_add)
