"""Figures a fault test measured, for bench/RESULTS.md's "Faults" table.

Tests assert behaviour, never time; they only record how long detection and
recovery took. ``python -m bench faults`` runs the suite with
``HEADWATER_FAULT_REPORT`` naming a file, and each test appends one JSON line
to it; without the variable ``record`` does nothing.
"""

from __future__ import annotations

import json
import os


def record(
    fault: str,
    *,
    detect_s: float | None,
    recover_s: float | None,
    readings: int,
    lost: int,
    duplicated: int,
) -> None:
    """One row: the fault, seconds to detect it (``None``: nothing to detect) and to recover,
    the readings sent through it, and how many of them were lost and duplicated."""
    path = os.environ.get("HEADWATER_FAULT_REPORT")
    if not path:
        return
    row = {
        "fault": fault,
        "detect_s": detect_s,
        "recover_s": recover_s,
        "readings": readings,
        "lost": lost,
        "duplicated": duplicated,
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
