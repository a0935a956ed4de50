"""The fleet bench's standby masters (``python -m bench fleet --failover takeover``).

``Standbys`` starts what two masters need to stand by for one another: a real ZooKeeper
(Debian's jars, ``tests/_zookeeper.py``) for their records and election, and a real Garage
(``tests/_garage.py``) as the blob store, so that the master that takes over has the
packages the first one was given. ``masters`` makes the two ``FleetMaster``\\ s on them (the
second reads the admin token the first made: the tokens are in ZooKeeper), and ``takeover``
is the failover the bench then times: the leader SIGKILLed, the standby leading.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.fleet_master import Failover, FleetMaster
from tests._garage import Garage
from tests._zookeeper import ZooKeeper


class Standbys:
    """ZooKeeper and Garage in ``work``, for two masters; ``stop`` ends both."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.zookeeper = ZooKeeper(work / "zookeeper")
        self.garage = Garage(work / "garage")

    def start(self) -> None:
        self.zookeeper.start()
        self.garage.start()

    def options(self) -> list[str]:
        """The options both masters are given: the state, its identity, the blob store."""
        auth = self.work / "zk.auth"
        auth.write_text("fleet-master:fleet-bench\n")
        os.chmod(auth, 0o600)
        credentials = self.garage.write_credentials(self.work / "s3.credentials")
        return [
            *("--state", self.zookeeper.url("fleet"), "--state-auth-file", str(auth)),
            *("--blob-store", f"s3://{self.garage.bucket}/blobs"),
            *("--s3-endpoint", self.garage.endpoint, "--s3-region", self.garage.region),
            *("--s3-credentials", str(credentials)),
        ]

    def masters(self) -> tuple[FleetMaster, FleetMaster]:
        """The leader, started (it leads once it serves), and the standby, started beside
        it on the same ZooKeeper (it serves once it leads)."""
        options = self.options()
        leader = FleetMaster(self.work, "master-a", options)
        leader.start()
        standby = FleetMaster(self.work, "master-b", options, leader.state / "admin.token")
        standby.launch()
        return leader, standby

    def stop(self) -> None:
        self.garage.stop()
        self.zookeeper.stop()


def takeover(standby: FleetMaster, timeout: float = 120.0) -> Failover:
    """The failover of standby masters: SIGKILL the leader; ``standby`` leads once its
    ZooKeeper session is over. Its CPU and memory are measured from the kill."""

    def fail(leader: FleetMaster) -> tuple[float, FleetMaster]:
        t0 = time.monotonic()
        standby.begin("storm")
        leader.kill()
        standby.wait_ready(timeout)
        return time.monotonic() - t0, standby

    return fail
