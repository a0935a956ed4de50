"""Daemon processes for integration tests: master, workers and agents, with their logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from headwater.common.security import JoinToken, TokenStore

from .._ports import free_port
from ._support import wait_for


class Daemons:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []
        self.grpc = self.http = ""
        self.token = ""  # the admin token the master made at its first start
        self.join_port, self.ca_fingerprint = 0, ""  # where nodes enrol, the CA they trust
        self.netns: str | None = None
        # where a topology's code runs on the nodes: as the node's user, so that it writes into
        # the test's folders (tests/integration/test_isolation.py sets None: the nodes' default)
        self.isolation: str | None = "none"

    def start_master(
        self, host: str = "127.0.0.1", netns: str | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        """``extra``: more of `headwater master`'s options."""
        ready = self.tmp / "master.json"
        self._spawn(
            [
                "master",
                "--host",
                host,
                "--port",
                str(free_port()),
                "--http-port",
                str(free_port()),
                "--state-dir",
                str(self.tmp / "master"),
                "--ready-file",
                str(ready),
                "--join-port",
                str(free_port()),
                *extra,
            ],
            "master.log",
            netns=netns,
        )
        self.netns = netns
        info = wait_for(lambda: ready.exists() and json.loads(ready.read_text()), 30, "master")
        self.grpc, self.http = info["grpc"], info["http"]
        self.join_port, self.ca_fingerprint = info["join_port"], info["ca_fingerprint"]
        self.token = (self.tmp / "master" / "admin.token").read_text().strip()

    def restart_master(self, extra: tuple[str, ...] = ()) -> None:
        """The master again, on the ports and state dir it had (``extra``: its options)."""
        grpc_port, http_port = self.grpc.rsplit(":", 1)[1], self.http.rsplit(":", 1)[1]
        ready = self.tmp / "master-again.json"
        self._spawn(
            [
                "master",
                *("--host", "127.0.0.1", "--port", grpc_port, "--http-port", http_port),
                *("--state-dir", str(self.tmp / "master"), "--ready-file", str(ready)),
                *("--join-port", str(self.join_port), *extra),
            ],
            "master-again.log",
        )
        wait_for(lambda: ready.exists() and json.loads(ready.read_text()), 30, "the master again")

    def start_worker(
        self,
        name: str,
        env: dict[str, str] | None = None,
        netns: str | None = None,
        with_id: bool = True,
        host: str | None = None,
        more: tuple[str, ...] = (),
    ) -> psutil.Process:
        """``host``: where its stream managers listen (agents elsewhere dial their ingress);
        ``more``: further options."""
        ident = ["--id", name] if with_id else []  # without: the one kept in its workdir
        where = ["--host", host] if host else []
        proc = self._spawn(
            [
                "worker",
                "--master",
                self.grpc,
                *ident,
                *where,
                "--workdir",
                str(self.tmp / name),
                *self.join("worker"),
                *self._isolation(),
                *more,
            ],
            f"{name}.log",
            env,
            netns=netns,
        )
        return psutil.Process(proc.pid)

    def start_agent(
        self, name: str, *args: str, netns: str | None = None, with_id: bool = True
    ) -> psutil.Process:
        """An agent whose workdir is ``name``'s; ``with_id=False``: no ``--id`` (it keeps the
        one it generated in its workdir), as the systemd unit runs it. Logs append."""
        ident = ["--id", name] if with_id else []
        if "--insecure" not in args and "--join" not in args:
            args = (*args, *self.join("agent"))
        proc = self._spawn(
            ["agent", *ident, "--workdir", str(self.tmp / name), *self._isolation(), *args],
            f"{name}.log",
            netns=netns,
        )
        return psutil.Process(proc.pid)

    def _isolation(self) -> list[str]:
        return ["--isolation", self.isolation] if self.isolation else []

    def join_token(self, role: str) -> str:
        """A new join token of ``role`` (as `headwater token create` makes one)."""
        raw = TokenStore(self.tmp / "master" / "tokens.json").create(role, ttl_s=3600)
        return str(JoinToken(self.join_port, raw, self.ca_fingerprint))

    def join(self, role: str) -> list[str]:
        """``--join TOKEN`` for a node's first start (a node enrolled before ignores it);
        none before the master has started."""
        return ["--join", self.join_token(role)] if self.join_port else []

    def _spawn(
        self, args: list[str], log: str, env: dict[str, str] | None = None, netns: str | None = None
    ) -> subprocess.Popen[bytes]:
        prefix = ["ip", "netns", "exec", netns] if netns else []
        with open(self.tmp / log, "ab") as out:  # a restarted daemon's log goes on
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "headwater", *args],
                stdout=out,
                stderr=out,
                env={**os.environ, **(env or {})},
            )
        self.procs.append(proc)
        return proc

    def cli(self, *args: str) -> str:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "headwater",
                *args,
                "--master",
                self.http,
                "--token",
                self.token,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout

    @property
    def auth(self) -> dict[str, str]:
        """The header that carries the admin token."""
        return {"Authorization": f"Bearer {self.token}"}

    def api(self, path: str) -> Any:
        """GET ``path`` from the master's API with the admin token."""
        if getattr(self, "netns", None):  # the master lives in a namespace of its own
            req = f"urllib.request.Request({self.http + path!r}, headers={self.auth!r})"
            code = (
                f"import urllib.request,sys;"
                f"sys.stdout.write(urllib.request.urlopen({req}).read().decode())"
            )
            out = subprocess.run(
                ["ip", "netns", "exec", str(self.netns), sys.executable, "-c", code],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout
            return json.loads(out)
        request = urllib.request.Request(f"{self.http}{path}", headers=self.auth)
        with urllib.request.urlopen(request, timeout=5) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def logs(self) -> str:
        """The last 3,000 characters of each daemon's log (and of the logs in their workdirs)."""
        return "\n".join(
            f"===== {f.relative_to(self.tmp)} =====\n{f.read_text(errors='replace')[-3000:]}"
            for f in sorted(self.tmp.rglob("*.log"))
        )
