"""The edge agent daemon (``headwater agent``): a node on a gateway next to the sensors.

It finds the master (``--master HOST:PORT``, or zeroconf on the LAN), attaches
with its labels (site, capabilities) so that edge components can be placed
on it, ingests MQTT into its durable log, keeps its outbox, and reports its
backlog with every status. Restart it at any moment: what it acknowledged to
the broker is in the durable log, what it has not is redelivered by the
broker, and the outbox keeps what the cloud has not confirmed.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from headwater.common._discovery import find_master
from headwater.common.runtime._node import Node
from headwater.common.wire.proto import runtime_pb2 as pb

from ._ingest import MqttIngest, MqttSource
from ._outbox import Outbox

log = logging.getLogger("headwater.edge.agent")
DEFAULT_OUTBOX_BUDGET = 256 << 20


class Agent(Node):
    def __init__(
        self,
        master: str | None,
        workdir: str | Path,
        *,
        node_id: str | None = None,
        labels: dict[str, str] | None = None,
        version: str = "",
        mqtt: MqttSource | None = None,
        outbox_budget: int = DEFAULT_OUTBOX_BUDGET,
    ) -> None:
        super().__init__(master or "", workdir, kind="agent", node_id=node_id, labels=labels,
                         version=version)  # fmt: skip
        self.outbox = Outbox(self.workdir / "outbox", outbox_budget)
        self.ingest: MqttIngest | None = None
        if mqtt is not None:
            self.ingest = MqttIngest(mqtt, self.workdir / "ingest",
                                     should_pause=self.outbox.over_budget)  # fmt: skip

    async def run(self) -> None:
        if not self.master:
            log.info("no --master given: looking for one by zeroconf")
            self.master = await find_master()
        if self.ingest is not None:
            self.ingest.start()
        try:
            await super().run()
        finally:
            if self.ingest is not None:
                await asyncio.get_running_loop().run_in_executor(None, self.ingest.stop)
            self.outbox.close()

    def status(self) -> pb.NodeStatus:
        s = super().status()
        s.backlog_bytes = self.outbox.nbytes
        s.backlog_batches = self.outbox.backlog
        if self.ingest is not None:
            st = self.ingest.stats
            s.metrics["mqtt_received"] = st.received
            s.metrics["mqtt_appended"] = st.appended
            s.metrics["mqtt_connected"] = 1.0 if st.connected else 0.0
            s.metrics["mqtt_paused_s"] = st.paused_s
        return s
