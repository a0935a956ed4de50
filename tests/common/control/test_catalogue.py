"""headwater.common.control._catalogue: a topology master's persisted checkpoint catalogue."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from headwater.common.control._catalogue import KEEP, Catalogue, CheckpointRecord
from headwater.common.wire._states import CheckpointState


def finish(cat: Catalogue, rec: CheckpointRecord, state: str = "COMPLETE") -> None:
    rec.state = CheckpointState(state)
    cat.save()


def test_empty_catalogue(tmp_path: Path) -> None:
    cat = Catalogue(tmp_path / "catalogue.json")
    assert cat.epoch == 0
    assert cat.next_id == 1
    assert cat.checkpoints == []
    assert cat.complete() == []
    assert cat.latest_complete() == 0
    assert cat.find(1) is None
    assert not (tmp_path / "catalogue.json").exists()


def test_start_complete_latest_find(tmp_path: Path) -> None:
    cat = Catalogue(tmp_path / "catalogue.json")
    r1 = cat.start(epoch=0)
    assert (r1.id, r1.epoch, r1.state) == (1, 0, "IN_PROGRESS")
    assert cat.next_id == 2
    assert (tmp_path / "catalogue.json").exists()
    assert cat.latest_complete() == 0

    finish(cat, r1)
    r2 = cat.start(epoch=0)
    finish(cat, r2)
    r3 = cat.start(epoch=1)
    finish(cat, r3, "FAILED")
    r4 = cat.start(epoch=1)

    assert [c.id for c in cat.complete()] == [1, 2]
    assert cat.latest_complete() == 2
    assert cat.latest_complete(below=2) == 1
    assert cat.latest_complete(below=1) == 0
    assert cat.latest_complete(below=100) == 2
    assert cat.find(3) is r3
    assert cat.find(4) is r4
    assert cat.find(99) is None


def test_persistence_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.json"
    cat = Catalogue(path)
    cat.epoch = 3
    r1 = cat.start(epoch=3)
    r1.size_bytes = 1234
    r1.duration_ms = 12.5
    r1.acked.update({1, 2, 3})
    finish(cat, r1)
    r2 = cat.start(epoch=3)
    finish(cat, r2, "CORRUPT")
    r3 = cat.start(epoch=3)  # the master dies during it
    assert r3.state == "IN_PROGRESS"

    data = json.loads(path.read_text())
    assert data["epoch"] == 3
    assert data["next_id"] == 4
    assert data["checkpoints"][0]["acked"] == 3
    assert "_t0" not in data["checkpoints"][0]

    again = Catalogue(path)
    assert again.epoch == 3
    assert again.next_id == 4
    assert [(c.id, c.epoch, c.state) for c in again.checkpoints] == [
        (1, 3, "COMPLETE"),
        (2, 3, "CORRUPT"),
        (3, 3, "FAILED"),
    ]
    first = again.find(1)
    assert first is not None
    assert first.size_bytes == 1234
    assert first.duration_ms == 12.5
    assert again.latest_complete() == 1
    assert again.start(epoch=4).id == 4


def test_save_keeps_last_complete_among_many_failed(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.json"
    cat = Catalogue(path)
    for _ in range(5):
        finish(cat, cat.start(epoch=0))
    for _ in range(KEEP * 2):
        finish(cat, cat.start(epoch=0), "FAILED")
    newest = 5 + KEEP * 2
    assert [c.id for c in cat.complete()] == [3, 4, 5]
    assert cat.latest_complete() == 5
    assert len(cat.checkpoints) == 3 + KEEP
    assert [c.id for c in cat.checkpoints][3:] == list(range(newest - KEEP + 1, newest + 1))
    ids = [c.id for c in cat.checkpoints]
    assert ids == sorted(ids)

    again = Catalogue(path)
    assert again.latest_complete() == 5
    assert again.latest_complete(below=5) == 4
    assert again.next_id == newest + 1


def test_a_save_the_disk_refuses_reports_it_and_the_next_one_retries(tmp_path: Path) -> None:
    cat = Catalogue(tmp_path / "gone" / "catalogue.json")  # a folder that is not there
    rec = cat.start(1)
    assert cat.error.startswith(f"cannot save {tmp_path / 'gone' / 'catalogue.json'}")
    rec.state = CheckpointState.COMPLETE
    assert not cat.save()
    (tmp_path / "gone").mkdir()
    assert cat.save() and cat.error == ""
    assert Catalogue(tmp_path / "gone" / "catalogue.json").latest_complete() == rec.id


def test_a_record_s_dict_is_every_field_but_its_clock_with_acked_counted() -> None:
    rec = CheckpointRecord(3, 2, 12.5, CheckpointState.COMPLETE, 4.0, 99, 5, {1, 2, 7})
    names = [f.name for f in dataclasses.fields(CheckpointRecord) if f.name != "_t0"]
    assert list(rec.to_dict()) == names
    assert rec.to_dict() == {
        "id": 3, "epoch": 2, "started": 12.5, "state": "COMPLETE", "duration_ms": 4.0,
        "size_bytes": 99, "revision": 5, "acked": 3,
    }  # fmt: skip
