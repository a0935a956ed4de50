"""The master's blob store (``--blob-store``) on a real Garage: blobs by their SHA-256, the
package store and the model registry over it (kept there before the request is answered,
fetched on a miss, checked, then cached; a store that is down fails the request with 503
and nothing is half-kept), and a second master on the same records and bucket resuming
what the first took."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from headwater.cloud.master._blob_store import MasterBlobs, cluster_name, open_blobs
from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master
from headwater.common._exceptions import PackageMismatchError
from headwater.common._package import PackageStore, package_hash
from headwater.common.state._s3 import S3Credentials
from headwater.common.state._store_args import SharedStore
from headwater.common.statemgr import (
    BlobRefused,
    BlobUnavailable,
    LocalStateManager,
    StateUnavailable,
    blob_name,
)
from tests._artifacts import artifact

from .._garage import Garage
from .._wait import wait_for
from ._packages import topology_package

JOB = b"def run(spark, ctx):\n    pass\n"


def _blobs(garage: Garage, secret: str | None = None) -> MasterBlobs:
    credentials = garage.credentials() if secret is None else S3Credentials(garage.key_id, secret)
    return open_blobs(SharedStore(garage.settings("masters"), credentials), "insecure")


def _keys(garage: Garage) -> set[str]:
    objects = garage.objects()
    try:
        return set(objects.listing("masters/"))
    finally:
        objects.close()


@asynccontextmanager
async def _master(
    state_dir: Path, records: Path, blobs: MasterBlobs, admin_file: Path
) -> AsyncIterator[tuple[Master, TestClient[Any, Any]]]:
    """A master whose own folder is ``state_dir``, its records in ``records`` (shared by the
    masters of a test, as ZooKeeper would be) and its blobs in ``blobs``; its REST API, with
    the admin token the first master wrote (``admin_file``)."""
    records.mkdir(parents=True, exist_ok=True)
    master = Master(state_dir, state=LocalStateManager(records), blobs=blobs)
    admin = admin_file.read_text().strip()
    client = TestClient(TestServer(make_app(master)), headers={"Authorization": f"Bearer {admin}"})
    await client.start_server()
    try:
        yield master, client
    finally:
        for task in master._coordinators.values():
            task.cancel()
        await client.close()


def test_blobs_are_kept_read_and_deleted_by_name_and_failures_say_why(garage: Garage) -> None:
    blobs = _blobs(garage)
    try:
        data = b"a package's bytes"
        name = blob_name(data)
        assert name == hashlib.sha256(data).hexdigest()
        packages = blobs.packages
        assert not packages.has(name) and packages.get(name) is None
        packages.put(name, data)
        assert packages.has(name) and packages.get(name) == data
        assert not blobs.models.has(name)  # each kind keeps its own
        assert _keys(garage) == {f"masters/insecure/packages/{name}"}
        packages.delete(name)
        packages.delete(name)  # nothing there is no error
        assert packages.get(name) is None and _keys(garage) == set()
        with pytest.raises(BlobRefused, match="is not a blob's name"):
            packages.put("../../etc", data)
        assert (
            packages.describe() == f"the blob store s3://checkpoints/masters at {garage.endpoint}"
        )
        assert cluster_name("sha256:" + "ab" * 32) == "ab" * 8 and cluster_name("") == "insecure"
    finally:
        blobs.close()
    wrong = _blobs(garage, secret="0" * 64)
    try:
        with pytest.raises(
            BlobRefused, match=f"s3://checkpoints/masters at {garage.endpoint}"
        ) as e:
            wrong.packages.put(name, data)
        assert "0" * 64 not in str(e.value)
    finally:
        wrong.close()
    blobs = _blobs(garage)
    garage.crash()
    try:
        with pytest.raises(BlobUnavailable, match="cannot reach it") as down:
            blobs.packages.has(name)
        assert isinstance(down.value, StateUnavailable)  # the REST API's 503
    finally:
        blobs.close()


def test_a_package_missing_here_is_fetched_checked_and_cached(
    garage: Garage, tmp_path: Path
) -> None:
    blobs = _blobs(garage)
    try:
        data = topology_package(tmp_path, "fetched")
        first = PackageStore(tmp_path / "a", blobs.packages)
        digest, fresh = first.keep(data)
        assert (digest, fresh) == (package_hash(data), True)
        assert first.keep(data) == (digest, False)  # here and there already
        hex_name = digest.partition(":")[2]
        assert _keys(garage) == {f"masters/insecure/packages/{hex_name}"}
        assert PackageStore(tmp_path / "a2", blobs.packages).keep(data) == (digest, False)

        other = PackageStore(tmp_path / "b", blobs.packages)
        assert not other.has(digest)
        assert other.get(digest) == data
        assert other.has(digest) and (tmp_path / "b" / hex_name).read_bytes() == data
        with pytest.raises(KeyError):
            other.get("sha256:" + "0" * 64)

        # altered in the bucket: refused, and nothing cached
        objects = garage.objects()
        objects.put(f"masters/insecure/packages/{hex_name}", data + b"!")
        objects.close()
        third = PackageStore(tmp_path / "c", blobs.packages)
        with pytest.raises(PackageMismatchError, match="the blob store s3://checkpoints/masters"):
            third.get(digest)
        assert not third.has(digest) and list((tmp_path / "c").iterdir()) == []
        assert other.get(digest) == data  # a cached copy is read here
    finally:
        blobs.close()


def test_a_submission_is_in_the_blob_store_before_it_is_answered(
    garage: Garage, tmp_path: Path
) -> None:
    blobs = _blobs(garage)

    async def body() -> None:
        state = (tmp_path / "m", tmp_path / "records", blobs, tmp_path / "m" / "admin.token")
        async with _master(*state) as (master, client):
            data = topology_package(tmp_path, "kept")
            resp = await client.post("/api/v1/topologies?entry=topo.py", data=data)
            assert resp.status == 201, await resp.text()
            name = package_hash(data).partition(":")[2]
            assert blobs.packages.get(name) == data  # there once answered
            # a refused submission keeps nothing, here or there
            bad = topology_package(tmp_path, "kept", spout="other")  # the name runs already
            resp = await client.post("/api/v1/topologies?entry=topo.py", data=bad)
            assert resp.status == 400, await resp.text()
            bad_name = package_hash(bad).partition(":")[2]
            await asyncio.to_thread(
                wait_for, lambda: not blobs.packages.has(bad_name), 10, "the refused one deleted"
            )
            assert sorted(p.name for p in (tmp_path / "m" / "packages").iterdir()) == [name]
            # the store down: the submission fails with 503 and nothing is kept
            garage.crash()
            down = topology_package(tmp_path / "down", "down")
            resp = await client.post("/api/v1/topologies?entry=topo.py", data=down)
            assert resp.status == 503
            said = (await resp.json())["error"]
            assert said.startswith("s3://checkpoints/masters at http") and "cannot reach" in said
            assert sorted(p.name for p in (tmp_path / "m" / "packages").iterdir()) == [name]
            assert not (tmp_path / "m" / "code" / package_hash(down).partition(":")[2]).exists()
            assert sorted(master.deployments) == ["kept"]
            resp = await client.post("/api/v1/models/m", data=artifact(5.0, name="m"))
            assert resp.status == 503 and "cannot reach" in (await resp.json())["error"]
            assert master.models.names() == [] and not (tmp_path / "m" / "models" / "m").exists()
            garage.start()
            assert _keys(garage) == {f"masters/insecure/packages/{name}"}

    try:
        asyncio.run(body())
    finally:
        blobs.close()


def test_a_second_master_resumes_runs_and_serves_what_the_first_took(
    garage: Garage, tmp_path: Path
) -> None:
    blobs = _blobs(garage)
    records, admin = tmp_path / "records", tmp_path / "a" / "admin.token"
    model = artifact(5.0, name="m")
    data = topology_package(tmp_path, "kept")
    digest = package_hash(data)

    async def first() -> str:
        async with _master(tmp_path / "a", records, blobs, admin) as (master, client):
            resp = await client.post("/api/v1/topologies?entry=topo.py", data=data)
            assert resp.status == 201, await resp.text()
            resp = await client.post("/api/v1/models/m", data=model)
            assert resp.status == 201 and (await resp.json())["sha256"] == blob_name(model)
            job = await master.spark_jobs.submit(JOB, "job.py", name="job")
            return str(job["package"])

    async def second() -> None:
        async with _master(tmp_path / "b", records, blobs, admin) as (master, client):
            await master.resume()
            assert sorted(master.deployments) == ["kept"] and master.book.held == {}
            assert (tmp_path / "b" / "packages" / digest.partition(":")[2]).read_bytes() == data
            served = await client.get("/api/v1/models/m/1?artifact=1")
            assert served.status == 200 and await served.read() == model
            assert (tmp_path / "b" / "models" / "m" / "1.json").read_bytes() == model
            # what a node fetches: the topology's package and the Spark job's
            assert master.package_store(digest).get(digest) == data
            job = master.package_store(job_package).get(job_package)
            assert (tmp_path / "b" / "spark" / "packages" / job_package[7:]).read_bytes() == job
            # a killed job's package leaves the bucket too
            assert (await client.delete("/api/v1/spark/jobs/job")).status == 200
            await asyncio.to_thread(
                wait_for,
                lambda: not blobs.spark_packages.has(job_package[7:]),
                10,
                "the killed job's package deleted",
            )

    try:
        job_package = asyncio.run(first())
        assert blobs.spark_packages.has(job_package[7:])
        asyncio.run(second())
        # an artifact altered in the bucket is not served by a master that lacks it
        objects = garage.objects()
        objects.put(f"masters/insecure/models/{blob_name(model)}", model + b" ")
        objects.close()

        async def third() -> None:
            async with _master(tmp_path / "c", records, blobs, admin) as (_, client):
                served = await client.get("/api/v1/models/m/1?artifact=1")
                assert served.status == 409
                assert "do not hash to its sha256" in (await served.json())["error"]
                assert not (tmp_path / "c" / "models" / "m" / "1.json").exists()

        asyncio.run(third())
    finally:
        blobs.close()


def test_the_master_refuses_bad_values_and_a_wrong_key_with_a_message(
    garage: Garage, tmp_path: Path
) -> None:
    def master(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *(sys.executable, "-m", "headwater", "master", "--no-advertise"),
                *("--state-dir", str(tmp_path / "m"), "--port", "9", "--http-port", "9"),
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = master("--blob-store", "s3://Bad_Bucket", "--s3-endpoint", "http://h:1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "headwater: error: --blob-store 's3://Bad_Bucket': 'Bad_Bucket' is not" in done.stderr
    done = master("--blob-store", "s3://bucket")
    assert done.returncode == 2 and "--s3-endpoint http(s)://HOST:PORT" in done.stderr
    done = master("--s3-endpoint", "http://h:1")
    assert done.stderr.strip().endswith("--s3-endpoint goes with --blob-store s3://BUCKET/PREFIX")
    store = ("--s3-endpoint", garage.endpoint, "--s3-region", garage.region)
    wrong = tmp_path / "wrong"
    wrong.write_bytes(S3Credentials(garage.key_id, "0" * 64).ini())
    wrong.chmod(0o600)
    done = master("--blob-store", f"s3://{garage.bucket}/p", *store, "--s3-credentials", str(wrong))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"headwater: error: s3://{garage.bucket}/p at {garage.endpoint}" in done.stderr
    assert "0" * 64 not in done.stderr
    right = garage.write_credentials(tmp_path / "right")
    done = master("--blob-store", "s3://no-such-bucket", *store, "--s3-credentials", str(right))
    assert done.returncode == 2 and "no bucket 'no-such-bucket' (create it" in done.stderr
    assert not (tmp_path / "m").exists()  # stopped before anything was made
    helped = subprocess.run(
        [sys.executable, "-m", "headwater", "master", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for flag in ("--blob-store", "--s3-endpoint", "--s3-region", "--s3-credentials"):
        assert flag in helped
