"""An edge container: the common container plus the uplink and outboxes of its domain.

The agent starts one per edge subgraph it runs, with its local topology
master as ``--tmaster`` and the uplink's settings in the environment
(``HEADWATER_UPLINK`` the master's address, which says where the receivers
run; ``HEADWATER_INGRESS_PROXY`` the HTTP CONNECT proxy through which the
receivers' stream managers are dialled, if any; ``HEADWATER_AGENT_ID``;
``HEADWATER_OUTBOX_BUDGET`` bytes). Run as ``python -m headwater.edge.container``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from headwater.common.plan._domains import OUTBOX_PREFIX
from headwater.common.runtime._container import Container, parser

from ._uplink import Uplink

UPLINK_ENV = "HEADWATER_UPLINK"
PROXY_ENV = "HEADWATER_INGRESS_PROXY"
AGENT_ENV = "HEADWATER_AGENT_ID"
BUDGET_ENV = "HEADWATER_OUTBOX_BUDGET"
DEFAULT_OUTBOX_BUDGET = 256 << 20


class EdgeContainer(Container):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        address, agent = os.environ.get(UPLINK_ENV), os.environ.get(AGENT_ENV)
        if not address or not agent:
            raise SystemExit(f"an edge container needs {UPLINK_ENV} and {AGENT_ENV} set")
        budget = int(os.environ.get(BUDGET_ENV) or DEFAULT_OUTBOX_BUDGET)
        boundary = [c.name[len(OUTBOX_PREFIX) :] for c in self.topology.components
                    if c.name.startswith(OUTBOX_PREFIX)]  # fmt: skip
        self.uplink = Uplink(address, agent, self.topology.name,
                             Path(self.args.state_dir).parent / "outbox", budget, self.stmgr,
                             components=boundary,
                             proxy=os.environ.get(PROXY_ENV, ""))  # fmt: skip
        self.stmgr.on_outbox = self.uplink.put
        self.stmgr.extra_metrics = self.uplink.metrics
        self.background.append(self.uplink.run)

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            self.uplink.close()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s edge-container %(name)s: %(message)s",
    )
    asyncio.run(EdgeContainer(args).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
