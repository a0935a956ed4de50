"""A master that takes over runs what another took (issue 38): master a, on ZooKeeper state and
a blob store in a real Garage, takes a submission and a model and stops; master b, on the same
ZooKeeper and bucket with an empty state folder of its own, resumes the deployment (not held),
serves the model's bytes as they were uploaded, and a worker attached to it fetches the
package from it and runs the container."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from headwater.cloud.master._main import NO_BLOB_STORE_WARNING
from tests._artifacts import artifact

from .._garage import Garage
from .._ports import free_port
from .._zookeeper import ZooKeeper
from ..cloud._packages import topology_package
from ._daemons import Daemons
from ._support import wait_for

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster]


def _call(daemons: Daemons, method: str, path: str, body: bytes | None = None) -> Any:
    request = urllib.request.Request(
        f"{daemons.http}{path}", data=body, method=method, headers=daemons.auth
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        data = r.read()
        return data if "artifact=1" in path else json.loads(data)


def test_a_master_that_takes_over_runs_the_deployment_and_serves_the_model(
    daemons: Daemons, zookeeper: ZooKeeper, garage: Garage, tmp_path: Path
) -> None:
    auth = tmp_path / "zk.auth"
    auth.write_text("headwater-master:correct-horse\n")
    os.chmod(auth, 0o600)
    shared = (
        *("--state", zookeeper.url("hw"), "--state-auth-file", str(auth), "--no-advertise"),
        *("--blob-store", "s3://checkpoints/masters", "--s3-endpoint", garage.endpoint),
        *("--s3-region", garage.region),
        *("--s3-credentials", str(garage.write_credentials(tmp_path / "s3-credentials"))),
    )
    daemons.start_master(extra=shared)
    package = topology_package(tmp_path, "kept")
    submitted = _call(daemons, "POST", "/api/v1/topologies?entry=topo.py&containers=1", package)
    model = artifact(5.0, name="m")
    assert _call(daemons, "POST", "/api/v1/models/m", model)["version"] == 1
    digest = submitted["package"]
    assert digest == "sha256:" + hashlib.sha256(package).hexdigest()
    cluster = daemons.ca_fingerprint.removeprefix("sha256:")[:16]
    objects = garage.objects()
    try:
        assert set(objects.listing("masters/")) == {
            f"masters/{cluster}/packages/{digest[7:]}",
            f"masters/{cluster}/models/{hashlib.sha256(model).hexdigest()}",
        }
    finally:
        objects.close()
    first_log = daemons.tmp / "master.log"
    assert NO_BLOB_STORE_WARNING not in first_log.read_text()
    daemons.stop()
    daemons.procs.clear()

    # master b: the same ZooKeeper and bucket, a state folder of its own, empty
    ready = daemons.tmp / "b.json"
    daemons._spawn(
        [
            "master",
            *("--host", "127.0.0.1", "--port", str(free_port())),
            *("--http-port", str(free_port()), "--join-port", str(free_port())),
            *("--state-dir", str(daemons.tmp / "b"), "--ready-file", str(ready), *shared),
        ],
        "b.log",
    )
    info = wait_for(lambda: ready.exists() and json.loads(ready.read_text()), 60, "master b")
    daemons.http, daemons.grpc = info["http"], info["grpc"]  # a's admin token is the cluster's
    [listed] = _call(daemons, "GET", "/api/v1/topologies")
    assert (listed["name"], listed["revision"], "held" in listed) == ("kept", 1, False)
    assert _call(daemons, "GET", "/api/v1/models/m/1?artifact=1") == model
    assert (daemons.tmp / "b" / "packages" / digest[7:]).read_bytes() == package
    assert (daemons.tmp / "b" / "models" / "m" / "1.json").read_bytes() == model

    # a worker that never met master a: b gives it the container and the package
    join = _call(daemons, "POST", "/api/v1/tokens", json.dumps({"role": "worker"}).encode())
    daemons._spawn(
        [
            "worker",
            *("--master", daemons.grpc, "--id", "w1", "--workdir", str(tmp_path / "w1")),
            *("--join", join["token"], "--isolation", "none"),
        ],
        "w1.log",
    )

    def running() -> bool:
        nodes = _call(daemons, "GET", "/api/v1/nodes")
        on_worker = any(n["id"] == "w1" and n["containers"] == ["kept/0"] for n in nodes)
        [c] = _call(daemons, "GET", "/api/v1/topologies/kept")["containers"] or [None]
        return on_worker and c is not None and c["online"] and c["pid"] > 0

    wait_for(running, 90, "container 0 of 'kept' running on w1, registered with master b")
    assert (tmp_path / "w1" / "packages" / f"{digest[7:]}.zip").read_bytes() == package
