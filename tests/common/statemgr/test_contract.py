"""The state manager's contract, run on both backends: local files and a real ZooKeeper."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.common.statemgr import (
    MAX_RECORD_BYTES,
    LocalStateManager,
    Record,
    StateError,
    StateManager,
    StateTooLarge,
    ZkStateManager,
    under,
)
from headwater.common.statemgr._zk_chunks import CHUNK_BYTES, MAGIC

from ..._zookeeper import ZooKeeper

pytestmark = pytest.mark.zookeeper
USER, PASSWORD = "master", "s3cret-for-tests"


@pytest.fixture(scope="module", autouse=True)  # before any test's count of its processes
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeper]:
    zk = ZooKeeper(tmp_path_factory.mktemp("zookeeper"))
    zk.start()
    try:
        yield zk
    finally:
        zk.stop()


@pytest.fixture(params=["local", "zookeeper"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateManager]:
    if request.param == "local":
        yield LocalStateManager(tmp_path / "state", create=True)
        return
    zk: ZooKeeper = request.getfixturevalue("server")
    manager = ZkStateManager(zk.hosts, f"/t-{secrets.token_hex(4)}", USER, PASSWORD)
    try:
        yield manager
    finally:
        manager.close()


def test_a_put_reads_back_and_replaces(state: StateManager) -> None:
    assert state.get("tokens.json") is None
    state.put("tokens.json", b"[1]")
    assert state.get("tokens.json") == b"[1]"
    state.put("tokens.json", b"[1, 2]")
    assert state.get("tokens.json") == b"[1, 2]"


def test_parents_are_made_and_children_listed_sorted(state: StateManager) -> None:
    state.put("topologies/b/revisions.json", b"r")
    state.put("topologies/a/catalogue.json", b"c")
    state.put("topologies/a/topology.json", b"t")
    assert state.children("") == ["topologies"]
    assert state.children("topologies") == ["a", "b"]
    assert state.children("topologies/a") == ["catalogue.json", "topology.json"]
    assert state.children("nothing/here") == []
    assert state.get("topologies/a") is None  # a folder holds no value


def test_delete_takes_a_record_or_a_whole_subtree(state: StateManager) -> None:
    state.put("topologies/a/catalogue.json", b"c")
    state.put("topologies/a/revisions.json", b"r")
    state.put("topologies/b/revisions.json", b"r")
    state.delete("topologies/b/revisions.json")
    assert state.get("topologies/b/revisions.json") is None
    state.delete("topologies/a")
    assert state.children("topologies/a") == [] and state.get("topologies/a/catalogue.json") is None
    state.delete("topologies/a")  # nothing there: no error
    state.delete("never")


def test_the_version_changes_with_every_put(state: StateManager) -> None:
    assert state.version("tokens.json") is None
    state.put("tokens.json", b"x")
    first = state.version("tokens.json")
    state.put("tokens.json", b"x")  # the same bytes: still another version
    second = state.version("tokens.json")
    assert first is not None and second is not None and first != second
    state.delete("tokens.json")
    assert state.version("tokens.json") is None


@pytest.mark.parametrize(
    "value",
    [
        b"",
        MAGIC + b"not a header",
        secrets.token_bytes(CHUNK_BYTES * 3 + 17),  # over a znode: chunked
        bytes(range(256)) * 4,
    ],
    ids=["empty", "magic", "large", "binary"],
)
def test_every_value_reads_back_as_written(state: StateManager, value: bytes) -> None:
    state.put("models/m/1.meta.json", value)
    assert state.get("models/m/1.meta.json") == value
    assert state.children("models/m") == ["1.meta.json"]
    state.put("models/m/1.meta.json", b"small again")
    assert state.get("models/m/1.meta.json") == b"small again"


def test_a_value_over_the_bound_is_refused_whole(state: StateManager) -> None:
    state.put("big", b"kept")
    with pytest.raises(StateTooLarge) as err:
        state.put("big", b"x" * (MAX_RECORD_BYTES + 1))
    assert f"{MAX_RECORD_BYTES + 1} bytes is over the {MAX_RECORD_BYTES}-byte bound" in str(
        err.value
    )
    assert state.get("big") == b"kept"


@pytest.mark.parametrize("bad", ["../x", "/abs", "a//b", "a/./b", "~chunk", "a/~b", "a\\b"])
def test_a_path_that_is_not_one_is_refused(state: StateManager, bad: str) -> None:
    with pytest.raises(StateError) as err:
        state.put(bad, b"x")
    assert str(err.value) == f"{bad!r} is not a state path (relative, slash-separated names)"


def test_a_corner_and_a_record_see_their_own_paths(state: StateManager) -> None:
    corner = under(state, "topologies/iot")
    corner.put("revisions.json", b"r")
    assert state.get("topologies/iot/revisions.json") == b"r"
    assert corner.children("") == ["revisions.json"]
    record = Record(state, "deployments.json")
    assert record.read() is None
    record.write(b"[]")
    assert record.read() == b"[]" and state.get("deployments.json") == b"[]"
    assert record.where.endswith("deployments.json")


def test_a_reader_sees_the_old_value_or_the_new_never_a_mix(state: StateManager) -> None:
    one, two = b"1" * (CHUNK_BYTES * 2 + 5), b"2" * (CHUNK_BYTES + 9)
    state.put("r", one)
    seen: set[bytes] = set()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            value = state.get("r")
            assert value is not None
            seen.add(value)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(10):
            state.put("r", two if i % 2 == 0 else one)
    finally:
        done.set()
        reader.join(30)
    assert seen and seen <= {one, two}
