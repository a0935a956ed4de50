"""headwater.common.state._store: the RocksDB checkpoint store."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.common.state import CheckpointStore, CorruptCheckpointError


def test_save_load_round_trip(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        blob = bytes(range(256)) * 10
        assert store.save(3, 7, blob) == len(blob)
        assert store.save(3, 8, b"") == 0
        assert store.load(3, 7) == blob
        assert store.load(3, 8) == b""
        store.save(3, 7, b"newer")
        assert store.load(3, 7) == b"newer"
    finally:
        store.close()


def test_reopen_keeps_snapshots(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    store.save(1, 1, b"one")
    store.close()
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        assert store.load(1, 1) == b"one"
    finally:
        store.close()


def test_missing_snapshot_raises(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        store.save(4, 1, b"x")
        with pytest.raises(CorruptCheckpointError, match=r"checkpoint 4 .*task 2"):
            store.load(4, 2)
        with pytest.raises(CorruptCheckpointError, match=r"checkpoint 5 .*task 1"):
            store.load(5, 1)
    finally:
        store.close()


def test_corrupted_snapshot_raises(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        store.save(6, 3, b"precious state")
        store.save(6, 4, b"other task")
        store.corrupt(6, 3)
        with pytest.raises(CorruptCheckpointError, match=r"checkpoint 6 of task 3"):
            store.load(6, 3)
        assert store.load(6, 4) == b"other task"
    finally:
        store.close()


def test_checkpoints_ascending(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        assert store.checkpoints() == []
        for ckpt in (12, 3, 256, 3, 1):
            for task in (2, 1):
                store.save(ckpt, task, b"s")
        assert store.checkpoints() == [1, 3, 12, 256]
    finally:
        store.close()


def test_prune_deletes_older_only(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        for ckpt in range(1, 6):
            for task in (0, 1, 5):
                store.save(ckpt, task, f"{ckpt}/{task}".encode())
        store.prune(keep_from=3)
        assert store.checkpoints() == [3, 4, 5]
        for task in (0, 1, 5):
            assert store.load(3, task) == f"3/{task}".encode()
            with pytest.raises(CorruptCheckpointError):
                store.load(2, task)
        store.prune(keep_from=3)
        assert store.checkpoints() == [3, 4, 5]
    finally:
        store.close()


def test_reader_beside_writer_catches_up(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    writer = CheckpointStore(path)
    writer.save(1, 1, b"first")
    reader = CheckpointStore(path, reader=True)
    try:
        assert reader.load(1, 1) == b"first"
        writer.save(2, 1, b"second")
        writer.save(2, 2, b"second-b")
        assert reader.load(2, 1) == b"second"
        assert reader.load(2, 2) == b"second-b"
        assert reader.checkpoints() == [1, 2]
    finally:
        reader.close()
        writer.close()
