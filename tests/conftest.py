"""Hygiene for every test: a private state dir, a clean environment, no stray processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

_CLEARED = ("HEADWATER_STATE_DIR", "HEADWATER_LOG_LEVEL", "HEADWATER_KEEP_WORKDIR")


@pytest.fixture(autouse=True)
def clean_environ(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Clear Headwater's variables and give each test its own state dir."""
    saved = {k: os.environ.pop(k) for k in _CLEARED if k in os.environ}
    os.environ["HEADWATER_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    try:
        yield
    finally:
        os.environ.pop("HEADWATER_STATE_DIR", None)
        os.environ.update(saved)


@pytest.fixture(autouse=True)
def no_leaked_processes() -> Iterator[None]:
    """Fail a test that leaves child processes running."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    leaked = [p for p in me.children(recursive=True) if p.pid not in before]
    _, alive = psutil.wait_procs(leaked, timeout=10)
    for p in alive:
        p.kill()
    assert not alive, f"test leaked processes: {[p.cmdline() for p in alive]}"


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d
