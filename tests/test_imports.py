"""Each package imports on its own in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "module",
    [
        "headwater",
        "headwater.common",
        "headwater.edge",
        "headwater.cloud",
        "headwater.cloud.worker",
        "headwater.common.node",
        "headwater.heronpy",
        "headwater.testing",
        "headwater.common.runtime.instance",
    ],
)
def test_imports_in_a_fresh_interpreter(module: str) -> None:
    proc = _run(f"import {module}")
    assert proc.returncode == 0, proc.stderr


def test_instance_does_not_import_grpc() -> None:
    # instances stay small: neither gRPC nor RocksDB unless the user's code asks for it
    code = (
        "import sys\n"
        "import headwater.common.runtime._instance\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'rocksdict'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_agent_imports_aiohttp_only_for_its_status_page() -> None:
    # aiohttp is about 9 MB of a gateway's memory: an agent without --status-port spares it
    code = (
        "import sys\n"
        "import headwater.edge._agent\n"
        "import headwater._daemon_cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'aiohttp'))\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
