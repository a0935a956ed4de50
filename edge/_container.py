"""An edge container: the common container plus the uplink and outboxes of its domain.

The agent starts one per edge subgraph it runs, with its local topology
master as ``--tmaster`` and the uplink's settings in the environment
(``HEADWATER_UPLINK`` the master's address, which says where the receivers
run; ``HEADWATER_INGRESS_PROXY`` the HTTP CONNECT proxy through which the
receivers' stream managers are dialled, if any; ``HEADWATER_AGENT_ID``;
``HEADWATER_OUTBOX_BUDGET`` bytes). Its outbox sinks' batches reach the
``Uplink`` through the stream manager's hooks (``on_outbox``), and the
uplink's metrics ride the container's heartbeat (``extra_metrics``).
Run as ``python -m headwater.edge.container``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from headwater.common._clock import SYSTEM_CLOCK, Clock
from headwater.common.plan._domains import OUTBOX_PREFIX
from headwater.common.runtime._container import Container
from headwater.common.runtime._container_config import ContainerConfig, parse_config
from headwater.common.runtime._hooks import Metric
from headwater.common.runtime.instance import AGENT_ID_ENV

from ._uplink import Uplink

UPLINK_ENV = "HEADWATER_UPLINK"
PROXY_ENV = "HEADWATER_INGRESS_PROXY"
AGENT_ENV = AGENT_ID_ENV  # its instances read it too (a rollout wave picks by agent id)
BUDGET_ENV = "HEADWATER_OUTBOX_BUDGET"
DEFAULT_OUTBOX_BUDGET = 256 << 20


class EdgeContainer(Container):
    def __init__(
        self,
        config: ContainerConfig,
        clock: Clock = SYSTEM_CLOCK,
        *,
        env: Mapping[str, str] | None = None,
        hosted: bool = False,
    ) -> None:
        """``env``: the settings above (default ``os.environ``); ``hosted``: inside the
        agent's own process (``_hosted.py``)."""
        super().__init__(config, clock, hosted=hosted)
        env = os.environ if env is None else env
        address, agent = env.get(UPLINK_ENV), env.get(AGENT_ENV)
        if not address or not agent:
            raise SystemExit(f"an edge container needs {UPLINK_ENV} and {AGENT_ENV} set")
        budget = int(env.get(BUDGET_ENV) or DEFAULT_OUTBOX_BUDGET)
        outbox = Path(config.state_dir).parent / "outbox"
        boundary = [
            c.name[len(OUTBOX_PREFIX) :]
            for c in self.topology.components
            if c.name.startswith(OUTBOX_PREFIX)
        ]
        self.uplink = Uplink(
            address,
            agent,
            self.topology.name,
            outbox,
            budget,
            self.stmgr,
            components=boundary,
            proxy=env.get(PROXY_ENV, ""),
        )
        self.background.append(self.uplink.run)

    def on_outbox(self, task: int, component: str, seq: int, rows: bytes) -> bool:
        self.uplink.put(task, component, seq, rows)
        return True

    def extra_metrics(self) -> list[Metric]:
        return self.uplink.metrics()

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            self.uplink.close()


def main(argv: list[str] | None = None) -> int:
    config = parse_config(argv)
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s edge-container %(name)s: %(message)s",
    )
    asyncio.run(EdgeContainer(config).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
