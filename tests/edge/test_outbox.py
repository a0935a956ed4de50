"""The durable outbox and the cloud's replay filter."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.common.runtime._receiver import ReplayFilter
from headwater.edge._outbox import Outbox


def test_batches_get_consecutive_sequence_numbers_and_survive_a_restart(tmp_path: Path) -> None:
    box = Outbox(tmp_path, budget_bytes=1000)
    assert [box.put(b"a" * 10), box.put(b"b" * 20), box.put(b"c" * 30)] == [1, 2, 3]
    assert (box.nbytes, box.backlog) == (60, 3)
    box.close()
    again = Outbox(tmp_path, budget_bytes=1000)
    assert list(again.pending()) == [(1, b"a" * 10), (2, b"b" * 20), (3, b"c" * 30)]
    assert (again.nbytes, again.backlog, again.next_seq) == (60, 3, 4)
    again.close()


def test_confirm_deletes_up_to_the_checkpointed_sequence(tmp_path: Path) -> None:
    box = Outbox(tmp_path, budget_bytes=1000)
    for i in range(5):
        box.put(bytes([i]) * 10)
    assert box.confirm(3) == 30
    assert [seq for seq, _ in box.pending()] == [4, 5]
    assert box.confirm(2) == 0  # an old confirmation changes nothing
    assert [seq for seq, _ in box.pending(after=4)] == [5]
    box.close()
    again = Outbox(tmp_path, budget_bytes=1000)
    assert (again.confirmed, again.backlog, again.nbytes) == (3, 2, 20)
    assert again.put(b"x") == 6  # numbering continues after a restart
    again.close()


def test_budget(tmp_path: Path) -> None:
    box = Outbox(tmp_path, budget_bytes=25)
    box.put(b"x" * 20)
    assert not box.over_budget()
    box.put(b"x" * 10)
    assert box.over_budget()
    box.confirm(1)
    assert not box.over_budget()
    box.close()
    with pytest.raises(ValueError, match="budget must be positive"):
        Outbox(tmp_path / "other", budget_bytes=0)


def test_replay_filter_drops_what_was_taken() -> None:
    f = ReplayFilter()
    assert [f.accept("gw1", s) for s in (1, 2, 2, 1, 3)] == [True, True, False, False, True]
    assert f.accept("gw2", 1)
    restored = ReplayFilter(dict(f.last))  # from checkpointed state after a rollback
    assert not restored.accept("gw1", 3)
    assert restored.accept("gw1", 4)


def test_replay_filter_takes_only_the_batch_that_follows() -> None:
    f = ReplayFilter()
    assert f.check("gw1", 5 << 20 | 1, 0) == "take"
    assert f.accept("gw1", 5 << 20 | 1, 0)
    assert f.check("gw1", 7 << 20 | 1, 6 << 20 | 1) == "gap"  # 6/1 went missing: ask again
    assert f.check("gw1", 5 << 20 | 1, 0) == "replay"
    assert f.accept("gw1", 6 << 20 | 1, 5 << 20 | 1)


def test_outbox_ignores_a_republished_sequence_number(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "ob", budget_bytes=1 << 20)
    assert box.put(b"a", seq=(3 << 20) | 1) == (3 << 20) | 1
    assert box.put(b"a", seq=(3 << 20) | 1) == 0  # a restore publishes it again
    assert box.put(b"b", seq=(5 << 20) | 1) == (5 << 20) | 1
    assert [s for s, _ in box.pending()] == [(3 << 20) | 1, (5 << 20) | 1]
    assert [s for s, _ in box.pending(after=(3 << 20) | 1)] == [(5 << 20) | 1]
    box.confirm((3 << 20) | 1)
    box.close()
    again = Outbox(tmp_path / "ob", budget_bytes=1 << 20)
    assert again.put(b"a", seq=(3 << 20) | 1) == 0  # confirmed and deleted: still refused
    assert [s for s, _ in again.pending()] == [(5 << 20) | 1]
    again.close()
