"""A compose cluster of deploy/compose for a test: its own project name, its ports on the
host's loopback only, and everything it made (containers, network, volumes) removed after."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose"
_VERSION = re.search(r'^version = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M)


def build_image() -> str:
    """``deploy/compose/build`` (layers already built are reused): the image's tag."""
    done = subprocess.run(
        [str(COMPOSE / "build")], capture_output=True, text=True, timeout=1800, check=False
    )
    assert done.returncode == 0, f"deploy/compose/build failed:\n{done.stderr[-4000:]}"
    # its phases and how long each took (pytest -s shows them)
    said = done.stderr.splitlines()
    print("\n".join(ln for ln in said if ln.startswith("build: ") and "]   " not in ln))
    return done.stdout.strip()


# How often a wait polls a condition that runs a process in a container (``docker exec``:
# about 0.1 CPU-s of Docker's and the container's each time; at the default 0.1 s a wait
# kept a core busy polling beside the cluster it waits on)
EXEC_POLL = 0.5


class ComposeCluster:
    """``docker-compose`` on ``files`` (deploy/compose's, in order: an override after the
    file it changes) as the project ``project``; ``reader``: the service whose container
    reads the data volume for the rounds (_compose_rounds.py)."""

    def __init__(
        self,
        project: str,
        env: dict[str, str] | None = None,
        files: tuple[str, ...] = ("docker-compose.yml",),
        reader: str = "spark-jobs",
    ) -> None:
        assert _VERSION is not None
        self.project = project
        self.files = files
        self.reader = reader
        self._ids: dict[str, str] = {}
        self.env = {
            **os.environ,
            "HEADWATER_VERSION": _VERSION.group(1),
            # every published port on the host's loopback, on a port Docker picks
            "HEADWATER_API_PUBLISH": "127.0.0.1:",
            "HEADWATER_GRPC_PUBLISH": "127.0.0.1:",
            "HEADWATER_JOIN_PUBLISH": "127.0.0.1:",
            **(env or {}),
        }

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                "docker-compose",
                "-p",
                self.project,
                *(a for f in self.files for a in ("-f", str(COMPOSE / f))),
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            cwd=COMPOSE,
            check=False,
        )

    def compose(self, *args: str, timeout: float = 300) -> str:
        """Run ``docker-compose ARGS`` on this project: its stdout; fails with its stderr."""
        done = self.run(*args, timeout=timeout)
        assert done.returncode == 0, f"docker-compose {' '.join(args)}:\n{done.stderr[-4000:]}"
        return done.stdout

    def containers(self, service: str) -> list[str]:
        """The ids of ``service``'s containers, running or not, by their number (what
        ``docker-compose ps -q SERVICE`` lists, from Docker's labels: Compose v1 is a Python
        program that takes most of a CPU-second a command, and the tests poll with this)."""
        done = subprocess.run(
            [
                "docker",
                "ps",
                "--all",
                "--no-trunc",
                "--filter",
                f"label=com.docker.compose.project={_label(self.project)}",
                "--filter",
                f"label=com.docker.compose.service={service}",
                "--filter",
                "label=com.docker.compose.oneoff=False",
                "--format",
                '{{.Label "com.docker.compose.container-number"}} {{.ID}}',
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"docker ps ({service}):\n{done.stderr[-4000:]}"
        numbered = (line.split() for line in done.stdout.splitlines() if line.strip())
        return [cid for _, cid in sorted((int(n), cid) for n, cid in numbered)]

    def container(self, service: str, index: int = 0) -> str:
        """The id of ``service``'s container (the ``index``-th of a scaled one)."""
        return self.containers(service)[index]

    def pinned(self, service: str) -> str:
        """The container of ``service`` that ``python`` runs in (of a scaled one, the first
        it found, until that one is gone)."""
        if service not in self._ids:
            self._ids[service] = self.container(service)
        return self._ids[service]

    def python(self, service: str, code: str) -> Any:
        """Run ``code`` in ``service``'s container; what it prints, as JSON. (``docker exec``:
        docker-compose v1 is a Python program that takes a second to start.)"""
        self.pinned(service)
        done = subprocess.run(
            ["docker", "exec", self._ids[service], "python3", "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode and "No such container" in done.stderr:
            del self._ids[service]  # recreated: look it up again
            return self.python(service, code)
        assert done.returncode == 0, f"python in {service}:\n{done.stderr[-4000:]}"
        return json.loads(done.stdout)

    def logs(self, *services: str) -> str:
        return self.compose("logs", "--no-color", *services)

    def down(self) -> None:
        self.run("down", "--volumes", "--remove-orphans", "--timeout", "5")


@contextmanager
def compose_cluster(
    project: str,
    env: dict[str, str] | None = None,
    files: tuple[str, ...] = ("docker-compose.yml",),
    services: tuple[str, ...] = (),
    reader: str = "spark-jobs",
) -> Iterator[ComposeCluster]:
    """``docker-compose up -d`` of deploy/compose (``services`` alone, and what they depend
    on, where given); on failure the services' last log lines are printed; ``down
    --volumes`` always."""
    cluster = ComposeCluster(project, env, files, reader)
    cluster.down()  # a project of that name left by a killed run
    try:
        cluster.compose("up", "-d", *services, timeout=600)
        yield cluster
    except BaseException:
        print(cluster.run("logs", "--no-color", "--tail", "40").stdout)
        raise
    finally:
        cluster.down()


def _label(project: str) -> str:
    """The project's name as Compose v1 labels its containers with it (lower case, only
    ``-``, ``_``, letters and digits)."""
    return re.sub(r"[^-_a-z0-9]", "", project.lower())
