"""The master's record of enrolled nodes: one record per node (a join writes its own, not
every node's again), read back by the next master, an older master's single record moved in
once, and ids that look like temporary files kept all the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headwater.cloud.master._enrolment import Enrolment, EnrolmentRefused
from headwater.common.security import TokenStore
from headwater.common.security._enrol import _csr
from headwater.common.statemgr import LocalStateManager, under


def _enrolment(state: Path, online: set[str] | None = None) -> tuple[Enrolment, str]:
    tokens = TokenStore(state / "tokens.json")
    token = tokens.create("agent")
    seen = online if online is not None else set()
    return Enrolment(under(LocalStateManager(state), "tls"), tokens, seen.__contains__), token


def test_each_join_keeps_its_own_record_and_the_next_master_reads_them(tmp_path: Path) -> None:
    enrolment, token = _enrolment(tmp_path)
    ids = ["gw-0", ".hidden", "edge.tmp", "a" * 58]  # 58: the longest in an agent's name
    for node_id in ids:
        enrolment.join(token, node_id, _csr(node_id)[0])
    records = sorted(p.name for p in (tmp_path / "tls" / "enrolled").iterdir())
    assert records == sorted(f"n-{i}.json" for i in ids)
    assert not (tmp_path / "tls" / "enrolled.json").exists()

    online = set(ids)
    again, token = _enrolment(tmp_path, online)
    assert sorted(again.enrolled) == sorted(ids)
    assert again.enrolled["gw-0"]["role"] == "agent"
    with pytest.raises(EnrolmentRefused, match="enrolled already and online"):
        again.join(token, ".hidden", _csr(".hidden")[0])

    again.forget("edge.tmp")
    assert sorted(_enrolment(tmp_path)[0].enrolled) == sorted(set(ids) - {"edge.tmp"})


def test_an_older_masters_single_record_is_moved_into_one_per_node(tmp_path: Path) -> None:
    (tmp_path / "tls").mkdir()
    old = {"w1": {"role": "worker", "at": 1.0, "token": "t1"}, "gw": {"role": "agent", "at": 2.0}}
    (tmp_path / "tls" / "enrolled.json").write_text(json.dumps(old))
    enrolment, _ = _enrolment(tmp_path)
    assert enrolment.enrolled == old
    assert not (tmp_path / "tls" / "enrolled.json").exists()
    assert sorted(p.name for p in (tmp_path / "tls" / "enrolled").iterdir()) == [
        "n-gw.json",
        "n-w1.json",
    ]
    assert _enrolment(tmp_path)[0].enrolled == old  # and so after the next start


def test_an_id_too_long_for_a_certificate_is_refused_saying_so(tmp_path: Path) -> None:
    """A node id may have 64 characters, a certificate's name ``ROLE:ID`` no more than 64."""
    enrolment, token = _enrolment(tmp_path)
    with pytest.raises(
        EnrolmentRefused, match=r"too long for its certificate \(named agent:ID.*use at most 58"
    ):
        enrolment.join(token, "a" * 59, _csr("a" * 59)[0])
    assert enrolment.enrolled == {}
