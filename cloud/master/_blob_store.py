"""The master's blob store in an S3-compatible bucket (``headwater master --blob-store``).

Masters that share ZooKeeper state share their records; with ``--blob-store
s3://BUCKET/PREFIX`` they share the bytes those records name too: topology packages,
Spark jobs' packages and model artifacts, each an object named by its SHA-256, so a
standby that takes over runs the topologies and serves the models the old leader took.
Per kind, under the cluster (the first 16 hex digits of its CA's fingerprint, as the
shared checkpoint store names it: two clusters that share a bucket and prefix never
meet, and one never deletes another's)::

    PREFIX/CLUSTER/packages/SHA256         a topology's package (a zip)
    PREFIX/CLUSTER/spark-packages/SHA256   a Spark job's package (a zip)
    PREFIX/CLUSTER/models/SHA256           a model artifact (JSON or ONNX)

Kinds are kept apart so that dropping one kind's blob (a Spark job killed) never takes
another kind's of the same bytes. ``S3Blobs`` is the ``Blobs`` port
(``common/statemgr/_blobs.py``) over ``ObjectStore``, whose errors it translates:
``BlobUnavailable`` (not reached, or failed on its side) and ``BlobRefused`` (it refused).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from headwater.common.state._s3 import CheckpointStoreError, ObjectStore, StoreUnavailable
from headwater.common.state._store_args import SharedStore
from headwater.common.statemgr import BlobRefused, Blobs, BlobUnavailable, blob_name_problem


class S3Blobs:
    """Blobs as objects under ``prefix`` of a bucket (blocking; threadsafe)."""

    def __init__(self, objects: ObjectStore, prefix: str) -> None:
        self.objects = objects
        self.prefix = prefix.strip("/")

    def _key(self, name: str) -> str:
        problem = blob_name_problem(name)
        if problem is not None:
            raise BlobRefused(problem)
        return f"{self.prefix}/{name}"

    def put(self, name: str, data: bytes) -> None:
        key = self._key(name)
        with _translated():
            self.objects.put(key, data)

    def get(self, name: str) -> bytes | None:
        key = self._key(name)
        with _translated():
            return self.objects.get(key)

    def has(self, name: str) -> bool:
        key = self._key(name)
        with _translated():
            return self.objects.exists(key)

    def delete(self, name: str) -> None:
        key = self._key(name)
        with _translated():
            self.objects.delete([key])

    def describe(self) -> str:
        return f"the blob store {self.objects.settings.describe()}"


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """The object store's errors as the blob port's (the message names store and key)."""
    try:
        yield
    except StoreUnavailable as exc:
        raise BlobUnavailable(str(exc)) from exc
    except CheckpointStoreError as exc:
        raise BlobRefused(str(exc)) from exc


@dataclass(frozen=True)
class MasterBlobs:
    """The master's blob stores, one per kind, and the client they share (``close``)."""

    packages: Blobs
    spark_packages: Blobs
    models: Blobs
    objects: ObjectStore

    def describe(self) -> str:
        return self.objects.settings.describe()

    def close(self) -> None:
        self.objects.close()


def open_blobs(store: SharedStore, cluster: str) -> MasterBlobs:
    """The blob stores of ``cluster`` (its CA's short fingerprint, or ``insecure``) in the
    bucket ``store`` names."""
    objects = ObjectStore(store.settings, store.credentials)
    root = "/".join(p for p in (store.settings.prefix, cluster) if p)
    return MasterBlobs(
        S3Blobs(objects, f"{root}/packages"),
        S3Blobs(objects, f"{root}/spark-packages"),
        S3Blobs(objects, f"{root}/models"),
        objects,
    )


def cluster_name(ca_fingerprint: str) -> str:
    """A cluster's name in the bucket: its CA fingerprint's first 16 hex digits, or
    ``insecure`` for a master without TLS (as ``_store_args.cluster_of`` names a worker's)."""
    return ca_fingerprint.removeprefix("sha256:")[:16] if ca_fingerprint else "insecure"
