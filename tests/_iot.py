"""The IoT example's step and I/O modules (``examples/iot``), imported as its topology
files import them: by name, their folder on ``sys.path`` (``headwater run`` puts it there)."""

from __future__ import annotations

import sys
from pathlib import Path

IOT = Path(__file__).resolve().parents[1] / "examples" / "iot"
if str(IOT) not in sys.path:
    sys.path.append(str(IOT))

import iot_io  # noqa: E402
import iot_steps  # noqa: E402

__all__ = ["IOT", "iot_io", "iot_steps"]
