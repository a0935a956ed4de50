from __future__ import annotations

import subprocess
import sys

import pytest

from headwater.common._ids import name_problem, node_id_problem


@pytest.mark.parametrize("good", ["gw-site0", "worker-host-1a2b3c4d", "a", "x" * 64, "n.1_2"])
def test_node_ids_that_are_taken(good: str) -> None:
    assert node_id_problem(good) is None


@pytest.mark.parametrize("bad", ["", "x" * 65, "a/b", "../etc", "a b", "gw#1", "é", ".", ".."])
def test_node_ids_that_are_refused_say_what_to_use(bad: str) -> None:
    assert node_id_problem(bad) == (
        f"{bad!r} is not a node id: use 1 to 64 letters, digits, '.', '_' or '-', and not '.' or "
        "'..' alone"
    )


def test_the_cli_refuses_a_bad_id_with_a_message() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "agent", "--id", "../x"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'../x' is not a node id" in done.stderr


def test_a_name_says_what_it_names() -> None:
    assert name_problem("iot", "topology name") is None
    assert name_problem("..", "topology name") == (
        "'..' is not a topology name: use 1 to 64 letters, digits, '.', '_' or '-', and not "
        "'.' or '..' alone"
    )


def test_a_topology_may_not_be_named_after_a_nodes_own_folders() -> None:
    from headwater.common._ids import NODE_ENTRIES, name_problem

    for entry in NODE_ENTRIES:
        assert "nodes keep their own" in (name_problem(entry, "topology name") or "")
        assert name_problem(entry, "node id") is None or "." in entry
