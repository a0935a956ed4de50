"""The IoT example's step, I/O and training modules (``examples/iot``), imported as its
topology files import them: by name, their folder on ``sys.path`` (``headwater run`` puts
it there; ``headwater spark train`` loads the training so too)."""

from __future__ import annotations

import sys
from pathlib import Path

IOT = Path(__file__).resolve().parents[1] / "examples" / "iot"
if str(IOT) not in sys.path:
    sys.path.append(str(IOT))

import anomaly_eval  # noqa: E402
import anomaly_train  # noqa: E402
import iot_io  # noqa: E402
import iot_steps  # noqa: E402

__all__ = ["IOT", "anomaly_eval", "anomaly_train", "iot_io", "iot_steps"]
