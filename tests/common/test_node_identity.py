"""A node's id: generated once and kept in its workdir; one node per workdir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headwater.common._exceptions import HeadwaterError
from headwater.common.node import lock_workdir, node_identity


def test_an_id_is_generated_once_and_kept(tmp_path: Path) -> None:
    first = node_identity(tmp_path / "gw", "agent")
    assert first.startswith("agent-") and first == (tmp_path / "gw" / "node-id").read_text().strip()
    assert node_identity(tmp_path / "gw", "agent") == first  # a restart: the same node
    assert node_identity(tmp_path / "other", "agent") != first


def test_a_given_id_wins_and_is_not_kept(tmp_path: Path) -> None:
    kept = node_identity(tmp_path, "worker")
    assert node_identity(tmp_path, "worker", "w1") == "w1"
    assert node_identity(tmp_path, "worker") == kept


def test_two_nodes_may_not_share_a_workdir(tmp_path: Path) -> None:
    fd = lock_workdir(tmp_path)
    try:
        with pytest.raises(HeadwaterError, match="is in use by another node"):
            lock_workdir(tmp_path)
    finally:
        os.close(fd)
    os.close(lock_workdir(tmp_path))  # free again
