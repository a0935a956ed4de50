"""A real single-node Garage (an S3-compatible object store) for the tests, on free loopback
ports in a folder of its own.

``scripts/install-garage`` (called by ``scripts/install-system-deps``) builds the pinned
version into ``$HEADWATER_TOOLS/garage/bin/garage`` (default ``~/.cache/headwater-build``),
so the tests that use it never skip: a machine without it fails them, saying what to run.

``start`` runs ``garage server``, waits until it answers, and the first time applies a
one-node layout, creates a key and a bucket and allows the key on it; ``stop`` ends the
process, ``crash`` kills it (and ``start`` again brings back the same server: same ports,
same data, as a server that came back).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

from ._ports import free_port as _free_port
from ._wait import wait_for

VERSION = "2.5.0"  # scripts/install-garage's
REGION = "garage"
START_S = 60.0


def garage_binary() -> Path:
    tools = os.environ.get("HEADWATER_TOOLS") or str(Path.home() / ".cache" / "headwater-build")
    return Path(tools) / "garage" / "bin" / "garage"


class Garage:
    """One single-node Garage: ``endpoint``, ``region``, ``bucket``, ``key_id``, ``secret``."""

    def __init__(self, folder: Path, bucket: str = "checkpoints") -> None:
        self.binary = garage_binary()
        if not self.binary.exists():
            raise RuntimeError(
                f"Garage is not at {self.binary}: run scripts/install-garage (it builds "
                f"Garage {VERSION} with cargo)"
            )
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.bucket = bucket
        self.region = REGION
        self.s3_port, rpc_port, admin_port = _free_port(), _free_port(), _free_port()
        self.endpoint = f"http://127.0.0.1:{self.s3_port}"
        self.config = folder / "garage.toml"
        self.config.write_text(
            f'metadata_dir = "{folder / "meta"}"\n'
            f'data_dir = "{folder / "data"}"\n'
            'db_engine = "lmdb"\n'
            "replication_factor = 1\n"
            f'rpc_bind_addr = "127.0.0.1:{rpc_port}"\n'
            f'rpc_public_addr = "127.0.0.1:{rpc_port}"\n'
            f'rpc_secret = "{secrets.token_hex(32)}"\n'
            "[s3_api]\n"
            f's3_region = "{REGION}"\n'
            f'api_bind_addr = "127.0.0.1:{self.s3_port}"\n'
            'root_domain = ".s3.garage.localhost"\n'
            "[admin]\n"
            f'api_bind_addr = "127.0.0.1:{admin_port}"\n'
            f'admin_token = "{secrets.token_hex(16)}"\n'
        )
        self.config.chmod(0o600)  # it holds the RPC secret
        self.log = folder / "garage.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.key_id = self.secret = ""

    def _cli(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.binary), "-c", str(self.config), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"garage {' '.join(args)}: {done.stderr.strip() or done.stdout}")
        return done.stdout

    def _api(self, call: str, body: dict[str, Any]) -> Any:
        return json.loads(self._cli("json-api", call, json.dumps(body)))

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [str(self.binary), "-c", str(self.config), "server"],
                stdout=out,
                stderr=out,
                env={**os.environ, "RUST_LOG": "garage=warn"},
            )

        def answering() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"garage ended: {self.log.read_text()[-2000:]}")
            return (
                subprocess.run(
                    [str(self.binary), "-c", str(self.config), "status"],
                    capture_output=True,
                    timeout=30,
                    check=False,
                ).returncode
                == 0
            )

        wait_for(answering, START_S, "garage answering", interval=0.1)
        if not self.key_id:
            self._set_up()
        wait_for(self._serving, START_S, "garage serving S3 requests", interval=0.1)

    def _set_up(self) -> None:
        node = self._cli("node", "id", "-q").strip().split("@")[0]
        self._cli("layout", "assign", "-z", "dc1", "-c", "1G", node)
        self._cli("layout", "apply", "--version", "1")
        key = self._api("CreateKey", {"name": "headwater-tests"})
        self.key_id, self.secret = key["accessKeyId"], key["secretAccessKey"]
        bucket = self._api("CreateBucket", {"globalAlias": self.bucket})
        self._api(
            "AllowBucketKey",
            {
                "bucketId": bucket["id"],
                "accessKeyId": self.key_id,
                "permissions": {"read": True, "write": True, "owner": True},
            },
        )

    def _serving(self) -> bool:
        from headwater.common.state._s3 import CheckpointStoreError

        objects = self.objects(timeout_s=2.0)
        try:
            objects.check()
        except CheckpointStoreError:
            return False
        finally:
            objects.close()
        return True

    def settings(self, prefix: str = "") -> Any:
        from headwater.common.state._s3 import S3Settings

        return S3Settings(self.bucket, prefix, self.endpoint, self.region)

    def credentials(self) -> Any:
        from headwater.common.state._s3 import S3Credentials

        return S3Credentials(self.key_id, self.secret)

    def objects(self, prefix: str = "", timeout_s: float = 10.0) -> Any:
        """An ``ObjectStore`` on the bucket, with the key."""
        from headwater.common.state._s3 import ObjectStore

        return ObjectStore(self.settings(prefix), self.credentials(), timeout_s=timeout_s)

    def write_credentials(self, path: Path) -> Path:
        """The key in the AWS shared credentials format, readable by its owner alone."""
        path.write_bytes(self.credentials().ini())
        path.chmod(0o600)
        return path

    def stop(self, grace_s: float = 3.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_s`` (Garage waits for its clients' idle
        keep-alive connections before it exits)."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def crash(self) -> None:
        """SIGKILL: a server that is gone at once (``start`` brings it back, its data kept)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None
