"""The Docker Engine side of the Docker scheduler: labels, names, one reconciling pass, logs.

Each Docker container of a cluster carries the labels ``CLUSTER``,
``TOPOLOGY``, ``CONTAINER`` and ``REVISION``; its name, hostname and node id
are one name (``container_name``). ``DockerEngine.reconcile_pass`` makes the
engine what a set of ``Wanted`` containers says (orphans and duplicates
removed, stopped ones started, missing ones created with the worker's command,
limits, restart policy and volume) and ``DockerEngine.logs`` reads a
container's logs. Everything here blocks (the SDK does): the scheduler
(``_docker.py``) calls it from a thread.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.common.api._config import ContainerResources

from ._scheduler import LogsError

log = logging.getLogger("headwater.master")

CLUSTER = "io.headwater.cluster"
TOPOLOGY = "io.headwater.topology"
CONTAINER = "io.headwater.container"
REVISION = "io.headwater.revision"
LABELS = (CLUSTER, TOPOLOGY, CONTAINER, REVISION)
WORKDIR = "/var/lib/headwater/worker"
"""The worker's folder inside the container (the image's, owned by its user)."""
RESTART_POLICY = {"Name": "unless-stopped"}
MAX_TAIL = 10_000
MAX_LOG_BYTES = 4 << 20
CLUSTER_FILE = "cluster-id"


def cluster_id(state_dir: str | Path) -> str:
    """The cluster's id: made once (12 hex digits) and kept in ``STATE/cluster-id``."""
    path = Path(state_dir) / CLUSTER_FILE
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        kept = ""
    if re.fullmatch(r"[0-9a-f]{12}", kept):
        return kept
    new = secrets.token_hex(6)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(new + "\n", encoding="utf-8")
    tmp.replace(path)
    return new


def listed(client: Any, filters: dict[str, str]) -> list[Any]:
    """Every container, running or not, that matches ``filters``. The SDK inspects each
    container it lists, so one removed in between (by this master's own pass, or by hand) is
    a 404: list again, a few times, rather than fail."""
    for attempt in range(5):
        try:
            return list(client.containers.list(all=True, filters=filters))
        except Exception as exc:
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                raise
            if attempt == 4:
                raise
    return []


def container_name(cluster: str, topology: str, index: int) -> str:
    """The Docker container's name, hostname and node id for ``topology``'s ``index``.

    ``hw-CLUSTER8-TOPOLOGY-INDEX``: a DNS label (63 characters at most, lower-case
    letters, digits and '-'), so peers resolve it on the Docker network. A topology name
    that is not one already (upper case, '.', '_', too long) is folded and gets a hash of
    the real name, so two topologies never share a name."""
    slug = re.sub(r"[^a-z0-9-]", "-", topology.lower())
    room = 63 - len(f"hw-{cluster[:8]}--{index}")
    if slug != topology or len(slug) > room:
        digest = hashlib.sha256(topology.encode()).hexdigest()[:8]
        slug = f"{slug[: room - 9]}-{digest}"
    return f"hw-{cluster[:8]}-{slug}-{index}"


@dataclass(frozen=True)
class Wanted:
    """One Docker container the deployments call for."""

    name: str
    topology: str
    index: int
    revision: int
    resources: ContainerResources

    def labels(self, cluster: str) -> dict[str, str]:
        return {
            CLUSTER: cluster,
            TOPOLOGY: self.topology,
            CONTAINER: str(self.index),
            REVISION: str(self.revision),
        }


@dataclass
class PassResult:
    """What one reconciling pass did (for logs and tests)."""

    created: list[str]
    started: list[str]
    removed: list[str]


class DockerEngine:
    """The containers of one cluster on one Docker Engine (``client``: a
    ``docker.DockerClient``, or a test's fake with the parts used here). Blocks."""

    def __init__(
        self, client: Any, *, cluster: str, image: str, network: str, advertise: str
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.image = image
        self.network = network
        self.advertise = advertise
        self.problems: dict[str, str] = {}  # container name -> why it cannot be created

    def reconcile_pass(
        self,
        wanted: dict[tuple[str, int], Wanted],
        removing: set[str],
        mint: Callable[[str], str | None],
    ) -> PassResult:
        result = PassResult([], [], [])
        found = listed(self.client, {"label": f"{CLUSTER}={self.cluster}"})
        keep: dict[tuple[str, int], Any] = {}
        # Docker names are unique: the one of the expected name is kept, any other
        # container with the same labels is a duplicate
        for container in sorted(found, key=lambda c: str(c.name)):
            key = _key(container)
            want = wanted.get(key) if key is not None else None
            if key is None or want is None or key[0] in removing or container.name != want.name:
                why = "orphan"
                if want is not None and key is not None and key[0] not in removing:
                    why = "a duplicate"
                self.remove(container, why)
                result.removed.append(container.name)
                continue
            keep[key] = container
        for key, want in sorted(wanted.items()):
            container = keep.get(key)
            if container is None:
                if self.create(want, mint):
                    result.created.append(want.name)
            elif _status(container) in ("exited", "created"):
                log.warning("Docker container %s is %s: starting it", want.name, _status(container))
                container.start()
                result.started.append(want.name)
        return result

    def remove(self, container: Any, why: str) -> None:
        log.info("removing Docker container %s (%s)", container.name, why)
        try:
            container.remove(force=True, v=True)
        except Exception as exc:
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                raise  # a container gone already is what was asked

    def create(self, want: Wanted, mint: Callable[[str], str | None]) -> bool:
        token = mint(want.name)
        command = [
            "headwater",
            "worker",
            "--master",
            self.advertise,
            "--id",
            want.name,
            "--workdir",
            WORKDIR,
            "--host",
            want.name,
            *(["--join", token] if token is not None else ["--insecure"]),
        ]
        try:
            self.client.containers.run(
                self.image,
                command,
                name=want.name,
                hostname=want.name,
                labels=want.labels(self.cluster),
                network=self.network,
                nano_cpus=round(want.resources.cpu * 1e9),
                mem_limit=want.resources.ram_bytes,
                restart_policy=dict(RESTART_POLICY),
                mounts=[{"Target": WORKDIR, "Type": "volume", "ReadOnly": False}],
                detach=True,
            )
        except Exception as exc:
            if getattr(getattr(exc, "response", None), "status_code", None) != 409:
                why = f"{type(exc).__name__}: {exc}"
                if self.problems.get(want.name) != why:  # once per new reason
                    log.error("cannot create Docker container %s: %s", want.name, why)
                self.problems[want.name] = why
                return False
            # 409: the name is taken (a removal still under way): the next pass sees it
            return False
        self.problems.pop(want.name, None)
        log.info(
            "created Docker container %s (%s container %d, %g CPUs, %d bytes)",
            want.name,
            want.topology,
            want.index,
            want.resources.cpu,
            want.resources.ram_bytes,
        )
        return True

    def logs(self, topology: str, index: int, name: str, tail: int) -> dict[str, Any]:
        found = listed(self.client, {"label": f"{CLUSTER}={self.cluster}", "name": name})
        ours = [c for c in found if c.name == name]
        if not ours:
            raise LogsError(
                404,
                f"container {index} of {topology!r} has no Docker container (yet): "
                f"{name} is created within a few seconds of the submission",
            )
        docker = ours[0]
        worker_log = _text(docker.logs(tail=tail))
        path = f"{WORKDIR}/{topology}/container-{index}/container.log"
        if _status(docker) == "running":
            code, out = docker.exec_run(["tail", "-n", str(tail), path], demux=False)
            container_log = _text(out) if code == 0 else f"(no log yet at {path})\n"
        else:
            container_log = f"(the Docker container is {_status(docker)}: its log file is kept)\n"
        return {
            "topology": topology,
            "container": index,
            "docker_container": name,
            "node": name,
            "status": _status(docker),
            "tail": tail,
            "worker_log": worker_log,
            "container_log": container_log,
            "container_log_path": path,
        }


def _status(container: Any) -> str:
    return str(container.attrs.get("State", {}).get("Status", "") or container.status)


def _key(container: Any) -> tuple[str, int] | None:
    labels = container.labels or {}
    topology, index = labels.get(TOPOLOGY, ""), labels.get(CONTAINER, "")
    if not topology or not index.isdigit() or not index.isascii():
        return None
    return topology, int(index)


def _text(data: bytes | str | None) -> str:
    raw = data.encode() if isinstance(data, str) else (data or b"")
    if len(raw) > MAX_LOG_BYTES:
        raw = raw[-MAX_LOG_BYTES:]
    return raw.decode("utf-8", errors="replace")


def tail_lines(text: str | None, default: int = 200) -> int:
    """The ``tail`` query: 1 to ``MAX_TAIL`` lines (ValueError otherwise)."""
    if text is None or text == "":
        return default
    if not text.isdigit() or not text.isascii() or not 1 <= int(text) <= MAX_TAIL:
        raise ValueError(f"tail must be a number of lines from 1 to {MAX_TAIL}")
    return int(text)
