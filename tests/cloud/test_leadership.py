"""The election against a real ZooKeeper: a member whose create lost its reply with the
connection is this master's own, and it never waits behind it."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from headwater.cloud.master._leadership import ELECTION, MEMBER, Leadership

from .._wait import wait_for
from .._zookeeper import ZooKeeper

pytestmark = pytest.mark.zookeeper
ROOT = "/hw"
FOLDER = f"{ROOT}/{ELECTION}"


@pytest.fixture
def clients(zookeeper: ZooKeeper) -> Iterator[tuple[KazooClient, KazooClient]]:
    """Two sessions: another master's and this one's."""
    made = [KazooClient(hosts=zookeeper.hosts) for _ in range(2)]
    for client in made:
        client.start(timeout=15)
    try:
        yield made[0], made[1]
    finally:
        for client in made:
            client.stop()
            client.close()


def _join(client: KazooClient, grpc: str) -> str:
    created = client.create(
        f"{FOLDER}/{MEMBER}",
        json.dumps({"grpc": grpc}).encode(),
        ephemeral=True,
        sequence=True,
        makepath=True,
    )
    return str(created).rsplit("/", 1)[1]


def _members(client: KazooClient, count: int) -> list[str]:
    members = sorted(client.get_children(FOLDER))
    return members if len(members) == count else []


def _campaign(leadership: Leadership) -> tuple[threading.Thread, list[int]]:
    won: list[int] = []
    thread = threading.Thread(target=lambda: won.append(asyncio.run(leadership.won())), daemon=True)
    thread.start()
    return thread, won


def test_a_member_whose_reply_was_lost_is_taken_up_not_joined_again(
    clients: tuple[KazooClient, KazooClient],
) -> None:
    other, mine = clients
    _join(other, "10.0.0.1:1")  # the leader
    lost = _join(mine, "10.0.0.2:2")  # made, but its reply went with the connection
    leadership = Leadership(mine, ROOT, {"grpc": "10.0.0.2:2"})
    thread, won = _campaign(leadership)
    try:
        other.stop()  # the leader's session ends: the next member leads
        thread.join(30)
        assert won == [1], "the master waited behind its own member"
        assert mine.get_children(FOLDER) == [lost]  # taken up, not a second one
        assert leadership.leader() == {"grpc": "10.0.0.2:2"}
    finally:
        leadership.end_campaign()  # one still waiting (a failure) ends
        thread.join(30)


def test_a_member_of_another_session_is_never_taken_for_its_own(
    clients: tuple[KazooClient, KazooClient],
) -> None:
    other, mine = clients
    theirs = _join(other, "10.0.0.1:1")
    leadership = Leadership(mine, ROOT, {"grpc": "10.0.0.2:2"})
    thread, won = _campaign(leadership)
    try:
        members = wait_for(lambda: _members(mine, 2), 30, "this master to join")
        assert members[0] == theirs
        assert won == [] and thread.is_alive()
        other.stop()
        thread.join(30)
        assert won == [1]
    finally:
        leadership.end_campaign()  # one still waiting (a failure) ends
        thread.join(30)
