"""``headwater worker``: a node (``headwater.common.node``) of kind ``worker``, until a signal.

A worker is a node and nothing more: it attaches to the master, runs the cloud
containers it is ordered to, restarts the ones that die, and reports its health.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from headwater.common.node import Node
from headwater.common.node._limits import DEFAULT_LIMITS, TopologyLimits
from headwater.common.security import JoinToken
from headwater.common.state._store_args import SharedStore


async def serve(
    master: str,
    workdir: Path,
    node_id: str | None,
    version: str,
    host: str = "127.0.0.1",
    insecure: bool = False,
    join_token: JoinToken | None = None,
    limits: TopologyLimits = DEFAULT_LIMITS,
    isolation: str = "auto",
    spark_folders: tuple[Path, Path] | None = None,
    checkpoint_store: SharedStore | None = None,
) -> None:
    """Run a worker attached to ``master`` until SIGTERM or SIGINT. ``spark_folders``: the
    landing and warehouse its Spark jobs get when theirs name none (default: WORKDIR/landing
    and WORKDIR/warehouse). ``checkpoint_store``: the shared store its containers'
    checkpoints go to (None: each container's on this host's disk)."""
    node = Node(
        master,
        workdir,
        kind="worker",
        node_id=node_id,
        version=version,
        host=host,
        insecure=insecure,
        join_token=join_token,
        limits=limits,
        isolation=isolation,
        spark_folders=spark_folders,
        checkpoint_store=checkpoint_store,
    )
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, node.stopping.set)
    await node.run()
