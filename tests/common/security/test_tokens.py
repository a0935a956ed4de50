"""Tokens: hashed at rest, roles ordered, expiry, join tokens that name the CA."""

from __future__ import annotations

import json
import os
import stat

import pytest

from headwater.common._exceptions import HeadwaterError
from headwater.common.security import JoinToken, TokenStore, parse_ttl, role_allows


def test_a_token_checks_until_it_expires_or_is_revoked(tmp_path):
    store = TokenStore(tmp_path / "tokens.json")
    text = store.create("operator", ttl_s=60, description="ci")
    record = store.check(text)
    assert record is not None and record.role == "operator"
    assert store.check(text, now=record.created + 61) is None  # expired
    token_id, secret = text.split(".")
    assert store.check(f"{token_id}.{secret[:-1]}x") is None  # a wrong secret
    assert store.check("nonsense") is None
    # kept hashed, readable by its owner only, and loaded again
    raw = (tmp_path / "tokens.json").read_text()
    assert secret not in raw and json.loads(raw)[0]["role"] == "operator"
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    again = TokenStore(tmp_path / "tokens.json")
    assert again.check(text) is not None
    assert again.revoke(token_id) and again.check(text) is None
    assert not again.revoke(token_id)


def test_roles_are_ordered_and_join_roles_reach_no_api():
    assert role_allows("admin", "operator") and role_allows("operator", "viewer")
    assert not role_allows("viewer", "operator") and not role_allows("operator", "admin")
    assert not role_allows("agent", "viewer")


def test_unknown_roles_and_lifetimes_are_refused(tmp_path):
    store = TokenStore(tmp_path / "tokens.json")
    with pytest.raises(HeadwaterError, match="no role"):
        store.create("root")
    assert parse_ttl("90s") == 90 and parse_ttl("15m") == 900 and parse_ttl("2d") == 172800
    for bad in ("", "-1h", "0", "1y", "h"):
        with pytest.raises(HeadwaterError, match="lifetime"):
            parse_ttl(bad)


def test_a_join_token_round_trips_and_garbage_is_refused():
    token = JoinToken(7072, "0123456789ab." + "s" * 43, "sha256:" + "ab" * 32)
    assert JoinToken.parse(str(token)) == token
    for bad in ("", "hwjoin.1.2.3", str(token).replace("hwjoin", "x"), str(token)[:-1]):
        with pytest.raises(HeadwaterError, match="not a join token"):
            JoinToken.parse(bad)


def test_a_store_sees_a_token_another_made_within_the_same_clock_tick(tmp_path):
    """Two saves within the file system's clock tick leave the same modification time; the
    master's store still reads the second (the test's join tokens made just before a node
    starts)."""
    path = tmp_path / "tokens.json"
    maker, master = TokenStore(path), TokenStore(path)
    first = maker.create("agent")
    assert master.check(first) is not None
    stamp = path.stat().st_mtime_ns
    second = maker.create("agent")
    os.utime(path, ns=(stamp, stamp))  # as if within the same tick
    assert master.check(second) is not None
