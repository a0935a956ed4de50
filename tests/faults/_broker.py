"""A Mosquitto broker a fault test can stop and start again, its sessions kept on disk."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .._ports import free_port
from .._wait import wait_for


class Broker:
    """Mosquitto on a fixed loopback port with persistence on: a restart keeps the persistent
    sessions and what they have queued (saved when it stops)."""

    def __init__(self, home: Path, port: int | None = None) -> None:
        self.home = home
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.proc: subprocess.Popen[bytes] | None = None
        home.mkdir(parents=True, exist_ok=True)
        self.conf = home / "mosquitto.conf"
        # started as root, Mosquitto would run as its own user, who cannot write here
        as_root = "user root\n" if os.geteuid() == 0 else ""
        self.conf.write_text(
            f"listener {self.port} 127.0.0.1\n"
            "allow_anonymous true\n"
            "persistence true\n"
            f"persistence_location {home}/\n"
            "max_queued_messages 0\n"  # keep a whole backlog for a paused subscriber
            "max_inflight_messages 20\n"
            f"{as_root}"
        )
        self.log = home / "mosquitto.log"

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def _accepting(self) -> bool:
        try:
            socket.create_connection((self.host, self.port), timeout=0.2).close()
            return True
        except OSError:
            return False

    def start(self) -> None:
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([binary, "-c", str(self.conf)], stdout=out, stderr=out)
        proc = self.proc

        def accepting() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"mosquitto did not start: {self.log.read_text()}")
            return self._accepting()

        wait_for(accepting, 10, f"mosquitto accepting on port {self.port}", interval=0.02)

    def stop(self) -> None:
        """SIGTERM: Mosquitto saves its sessions and exits."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A broker not yet started (``broker.start()``); stopped at the end."""
    b = Broker(tmp_path / "broker")
    try:
        yield b
    finally:
        b.stop()
