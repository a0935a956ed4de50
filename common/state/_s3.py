"""An S3-compatible object store for checkpoints and the master's blobs: where it is, its
credentials, a client.

``S3Settings`` says where (``s3://BUCKET/PREFIX``, an endpoint, a region);
``S3Credentials`` says with what, read from a file (the AWS shared credentials
format) or the environment, never from a command line. ``ObjectStore`` is the
few calls a shared checkpoint store (``_shared_store.py``) and the master's blob
store (``cloud/master/_blob_store.py``) make (put, get, exists, list, delete), path-style
and signed with SigV4 by the ``minio`` package: pure Python over urllib3, a
smaller install than boto3's botocore, and it speaks to any S3-compatible
server (Garage, MinIO, Ceph, AWS).

Every ``ObjectStore`` method blocks on the network, bounded by its timeouts and
a couple of quick retries; call them from worker threads, never on an event
loop. One ``ObjectStore`` is safe to share between threads (one urllib3 pool).
Errors come out as ``CheckpointStoreError`` (the store refused: a wrong key, a
missing bucket) or ``StoreUnavailable`` (it could not be reached, or failed on
its side: try again later), with the endpoint and the key in the message and
no secret.
"""

from __future__ import annotations

import configparser
import contextlib
import io
import os
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .._exceptions import HeadwaterError

LOCAL = "local"
"""``--checkpoint-store``'s default: each container's checkpoints on its own disk."""
DEFAULT_REGION = "us-east-1"
"""S3's own default; Garage's is ``garage`` (its ``s3_region``)."""
KEY_ENV, SECRET_ENV = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_PREFIX = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")


class CheckpointStoreError(HeadwaterError):
    """The object store refused a request (credentials, bucket, a bad answer): a shared
    checkpoint store's, or the master's blob store's."""


class StoreUnavailable(CheckpointStoreError):
    """The object store could not be reached, or failed on its side: try later."""


@dataclass(frozen=True)
class S3Credentials:
    access_key: str
    secret_key: str = field(repr=False)

    def ini(self) -> bytes:
        """These credentials in the AWS shared credentials format (handed to a child on its
        standard input, never on its command line)."""
        return (
            f"[default]\naws_access_key_id = {self.access_key}\n"
            f"aws_secret_access_key = {self.secret_key}\n"
        ).encode()


@dataclass(frozen=True)
class S3Settings:
    """Where a shared checkpoint store is: ``s3://BUCKET/PREFIX`` at ``endpoint``."""

    bucket: str
    prefix: str  # "" or a/b/c: every key of this store starts with it
    endpoint: str  # http(s)://HOST[:PORT]
    region: str = DEFAULT_REGION

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def describe(self) -> str:
        """Who shares this store (no secret in it): workers that say the same share it."""
        return f"{self.url} at {self.endpoint}"


def parse_store(text: str, flag: str = "--checkpoint-store") -> tuple[str, str] | None:
    """``flag``'s value (``--checkpoint-store``, ``--blob-store``): None for ``local``, else
    ``s3://BUCKET[/PREFIX]``'s bucket and prefix; HeadwaterError saying what is wrong."""
    if text == LOCAL:
        return None
    if not text.startswith("s3://"):
        raise HeadwaterError(
            f"{flag} {text!r}: say 'local' or s3://BUCKET/PREFIX (an "
            f"S3-compatible object store, with --s3-endpoint)"
        )
    bucket, _, prefix = text.removeprefix("s3://").partition("/")
    prefix = prefix.strip("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise HeadwaterError(
            f"{flag} {text!r}: {bucket!r} is not a bucket name (3 to 63 "
            f"lowercase letters, digits, dots and hyphens, a letter or digit at each end)"
        )
    if prefix and (not _PREFIX.fullmatch(prefix) or ".." in prefix.split("/")):
        raise HeadwaterError(
            f"{flag} {text!r}: the prefix {prefix!r} may hold letters, digits, "
            f"'.', '_', '-' and single '/' between parts"
        )
    return bucket, prefix


def parse_endpoint(text: str) -> str:
    """``--s3-endpoint``: ``http(s)://HOST[:PORT]``, nothing else (no credentials in it)."""
    url = urllib.parse.urlsplit(text)
    problem = ""
    if url.scheme not in ("http", "https") or not url.hostname:
        problem = "give http://HOST:PORT or https://HOST[:PORT]"
    elif url.username is not None or url.password is not None:
        problem = "credentials never go in a URL: give them with --s3-credentials FILE"
    elif url.path.strip("/") or url.query or url.fragment:
        problem = "the endpoint is the server alone (the bucket goes in the store's s3:// URL)"
    else:
        try:
            url.port  # noqa: B018 (raises on a port that is not a number)
        except ValueError:
            problem = "its port is not a number"
    if problem:
        raise HeadwaterError(f"--s3-endpoint {text!r}: {problem}")
    return f"{url.scheme}://{url.netloc}"


def read_credentials(text: str, where: str) -> S3Credentials:
    """Credentials in the AWS shared credentials format (its ``[default]`` profile)."""
    ini = configparser.ConfigParser(interpolation=None)
    try:
        ini.read_string(text, where)
        profile = ini["default"]
        key, secret = profile["aws_access_key_id"].strip(), profile["aws_secret_access_key"]
    except (configparser.Error, KeyError):
        raise HeadwaterError(
            f"{where}: not S3 credentials; write '[default]', 'aws_access_key_id = KEY' and "
            f"'aws_secret_access_key = SECRET' on three lines"
        ) from None
    if not key or not secret.strip():
        raise HeadwaterError(f"{where}: the access key or the secret is empty")
    return S3Credentials(key, secret.strip())


def load_credentials(path: str | None) -> S3Credentials:
    """From ``path`` (``--s3-credentials``) or else ``$AWS_ACCESS_KEY_ID`` and
    ``$AWS_SECRET_ACCESS_KEY``; HeadwaterError when there are none."""
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise HeadwaterError(
                f"--s3-credentials {path!r}: cannot read it ({exc.strerror})"
            ) from None
        return read_credentials(text, f"--s3-credentials {path!r}")
    key, secret = os.environ.get(KEY_ENV, ""), os.environ.get(SECRET_ENV, "")
    if not key or not secret:
        raise HeadwaterError(
            f"an S3 store needs credentials: --s3-credentials FILE, or ${KEY_ENV} and ${SECRET_ENV}"
        )
    return S3Credentials(key, secret)


class ObjectStore:
    """Put, get, list and delete objects under one bucket (blocking; thread-safe)."""

    def __init__(
        self,
        settings: S3Settings,
        credentials: S3Credentials,
        *,
        timeout_s: float = 10.0,
        retries: int = 2,
    ) -> None:
        try:
            import urllib3
            from minio import Minio
        except ImportError:
            raise HeadwaterError(
                "an S3 store needs the minio package: pip install 'headwater[s3]'"
            ) from None
        url = urllib.parse.urlsplit(settings.endpoint)
        self.settings = settings
        pool = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=min(3.0, timeout_s), read=timeout_s),
            retries=urllib3.Retry(
                total=retries,
                backoff_factor=0.1,
                status_forcelist=(500, 502, 503, 504),
                allowed_methods=None,  # every S3 call here may be repeated
            ),
            maxsize=16,
        )
        self._http = pool
        self._client = Minio(
            url.netloc,
            access_key=credentials.access_key,
            secret_key=credentials.secret_key,
            secure=url.scheme == "https",
            region=settings.region,
            http_client=pool,
        )

    def put(self, key: str, data: bytes) -> None:
        with self._translated(f"storing {key}"):
            self._client.put_object(self.settings.bucket, key, io.BytesIO(data), len(data))

    def get(self, key: str) -> bytes | None:
        """The object's bytes; None when there is no such object."""
        from minio.error import S3Error

        with self._translated(f"reading {key}"):
            try:
                response = self._client.get_object(self.settings.bucket, key)
            except S3Error as exc:
                if exc.code == "NoSuchKey":
                    return None
                raise
            try:
                return response.read()
            finally:
                response.close()
                response.release_conn()

    def exists(self, key: str) -> bool:
        """Whether there is an object at ``key`` (one HEAD request)."""
        from minio.error import S3Error

        with self._translated(f"looking for {key}"):
            try:
                self._client.stat_object(self.settings.bucket, key)
            except S3Error as exc:
                if exc.code == "NoSuchKey":
                    return False
                raise
            return True

    def listing(self, prefix: str) -> dict[str, int]:
        """Every object whose key starts with ``prefix``: key -> size in bytes."""
        with self._translated(f"listing {prefix}"):
            found = self._client.list_objects(self.settings.bucket, prefix=prefix, recursive=True)
            return {o.object_name: o.size or 0 for o in found if o.object_name is not None}

    def delete(self, keys: list[str]) -> None:
        from minio.deleteobjects import DeleteObject

        if not keys:
            return
        with self._translated(f"deleting {len(keys)} objects"):
            errors = list(
                self._client.remove_objects(self.settings.bucket, [DeleteObject(k) for k in keys])
            )
        if errors:
            raise CheckpointStoreError(
                f"{self.settings.describe()}: {len(errors)} objects not deleted, the first "
                f"{errors[0].name}: {errors[0].message}"
            )

    def check(self) -> None:
        """Raise unless the bucket is there and the credentials may use it."""
        with self._translated("looking for the bucket"):
            exists = self._client.bucket_exists(self.settings.bucket)
        if not exists:
            raise CheckpointStoreError(
                f"{self.settings.describe()}: no bucket {self.settings.bucket!r} (create it, "
                f"and allow this key to read and write it)"
            )

    def close(self) -> None:
        """Close its idle connections (a server waits for open ones before it stops)."""
        self._http.clear()

    def _translated(self, what: str) -> contextlib.AbstractContextManager[None]:
        return _translated(self.settings, what)


@contextlib.contextmanager
def _translated(settings: S3Settings, what: str) -> Iterator[None]:
    """minio's and urllib3's errors as ours, naming the store and the request."""
    from minio.error import InvalidResponseError, S3Error, ServerError
    from urllib3.exceptions import HTTPError

    where = f"{settings.describe()}, {what}"
    try:
        yield
    except S3Error as exc:
        raise CheckpointStoreError(f"{where}: {exc.code} ({exc.message})") from exc
    except (ServerError, InvalidResponseError) as exc:
        raise StoreUnavailable(f"{where}: the server failed ({exc})") from exc
    except (HTTPError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise StoreUnavailable(f"{where}: cannot reach it ({reason})") from exc
