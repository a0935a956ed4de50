"""Where the IoT example reads and writes: its ingest log and its output folder.

- the ingest log: ``IOT_LOG``, else (on an agent) the agent's own (``HEADWATER_INGEST_LOG``);
  with neither, the ``readings`` spout refuses to open, saying what to set, instead of
  idling on a log that does not exist;
- the outputs: ``IOT_OUT``, else ``./iot-out`` under the current folder (said on stderr),
  never a system folder.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from headwater import Context
from headwater.common.connectors import LogSpout

NO_LOG = (
    "no ingest log to read: set IOT_LOG to the folder of a durable log of readings (an "
    "agent's --ingest-log, or the folder an MqttIngest writes), or submit the topology to a "
    "master with agents, whose edge half reads the agent's own log"
)


def ingest_log() -> str:
    """The ingest log's folder, or "" when none is named (said at once, on stderr)."""
    log = os.environ.get("IOT_LOG") or os.environ.get("HEADWATER_INGEST_LOG", "")
    if not log:
        print(f"IOT_LOG is not set: {NO_LOG}", file=sys.stderr)
    return log


def out_dir() -> str:
    """``IOT_OUT``, else ``iot-out`` under the current folder (said once per process)."""
    out = os.environ.get("IOT_OUT")
    if out:
        return out
    out = os.path.abspath("iot-out")
    print(f"IOT_OUT is not set: the IoT example writes its outputs under {out}", file=sys.stderr)
    return out


class Readings(LogSpout):
    """The ingest log's records; refuses to open without a log to read, saying why."""

    outputs = ("topic", "payload", "received_ms")

    def __init__(self, path: str, partitions: int, **kwargs: Any) -> None:
        super().__init__(path or ".", partitions, **kwargs)
        self.named = bool(path)

    def open(self, ctx: Context) -> None:
        if not self.named:
            raise ValueError(NO_LOG)
        if not self.path.exists():
            ctx.log.warning("the ingest log %s does not exist yet: waiting for it", self.path)
        super().open(ctx)
