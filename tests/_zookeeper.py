"""A real standalone ZooKeeper for the tests: Debian's ``zookeeper`` package, its jars run
with ``java -cp`` on a free loopback port, in a folder of its own.

``scripts/install-system-deps`` installs the package, so the tests that use it never skip:
a machine without it fails them, saying what to install.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

from ._ports import free_port
from ._wait import wait_for

JARS = ("/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar")
MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
START_S = 60.0  # a JVM's start on a busy machine with two cores


class ZooKeeper:
    """One standalone server: ``start`` (and again after ``stop``, same port and data, as
    a server that came back), ``stop``; ``hosts`` and ``url`` to reach it."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        missing = [j for j in JARS if not Path(j).exists()]
        java = shutil.which("java")
        if missing or java is None:
            raise RuntimeError(
                f"ZooKeeper's jars or java are missing ({missing or 'java'}): run "
                "scripts/install-system-deps (Debian's zookeeper package, Java 17)"
            )
        self.java = java
        self.folder = folder
        self.port = port or free_port()
        self.log = folder / "zookeeper.log"
        (folder / "data").mkdir(parents=True, exist_ok=True)
        self.conf = folder / "zoo.cfg"
        self.conf.write_text(
            "tickTime=500\n"  # sessions of 1-10 s: a lost server is noticed quickly
            "minSessionTimeout=1000\n"
            f"dataDir={folder / 'data'}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok\n"
            "maxClientCnxns=100\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, chroot: str = "headwater") -> str:
        return f"zk://{self.hosts}/{chroot}"

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [
                    self.java,
                    "-Xmx512m",  # its data is in memory: 128m ran out under MiBs of writes
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    f"-Dzookeeper.log.dir={self.folder}",
                    "-cp",
                    ":".join(JARS),
                    MAIN,
                    str(self.conf),
                ],
                stdout=out,
                stderr=out,
                stdin=subprocess.DEVNULL,
            )
        wait_for(self._ok, START_S, f"ZooKeeper answering on {self.hosts}", interval=0.1)

    def _ok(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(f"ZooKeeper did not start: {self.log_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(16) == b"imok"
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # as a crashed server: no goodbye to its clients
            self.proc.wait(10)
        self.proc = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
