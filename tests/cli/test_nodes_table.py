"""`headwater nodes`: an aligned table, each column as wide as its longest value, so ids of
any length (a compose worker's is a 64-digit container id) never run into the next column."""

from __future__ import annotations

from typing import Any

from headwater._cluster_cli import nodes_table

LONG = "worker-" + "0123456789abcdef" * 4  # 71 characters
AGENT = "gw-site0"


def _node(node_id: str, kind: str, **over: Any) -> dict[str, Any]:
    node = {
        "id": node_id,
        "kind": kind,
        "online": True,
        "health": "ok",
        "last_heartbeat_s_ago": 0.4,
        "version": "0.1.0",
        "backlog_bytes": 0,
        "labels": {},
        "containers": [],
        "error": "",
        "reasons": [],
    }
    return {**node, **over}


def _columns(header: str) -> list[int]:
    """Where each header's name starts."""
    names = ("node", "kind", "state", "health", "seen s ago", "version", "backlog KB")
    return [header.index(n) for n in names]


def test_columns_are_as_wide_as_their_longest_value() -> None:
    lines = nodes_table(
        [
            _node(LONG, "worker", containers=["iot/0", "iot/1"]),
            _node(
                AGENT,
                "agent",
                online=False,
                health="degraded",
                last_heartbeat_s_ago=1234.5,
                backlog_bytes=2_500_000,
                labels={"site": "site0"},
                reasons=["broker unreachable"],
            ),
        ]
    )
    header, worker, agent, reason = lines
    starts = _columns(header)
    assert starts[1] == len(LONG) + 2  # the id column: the longest id, then two spaces
    for row, kind in ((worker, "worker "), (agent, "agent ")):
        assert row[starts[1] :].startswith(kind)
        assert row[starts[2] :].startswith(("online ", "offline "))
    assert worker.split() == [
        LONG,
        "worker",
        "online",
        "ok",
        "0.4",
        "0.1.0",
        "0.0",
        "iot/0",
        "iot/1",
    ]
    assert agent.split() == [
        AGENT,
        "agent",
        "offline",
        "degraded",
        "1234.5",
        "0.1.0",
        "2500.0",
        "site=site0",
    ]
    # numbers end where their header ends
    end = header.index("backlog KB") + len("backlog KB")
    assert worker[:end].endswith(" 0.0") and agent[:end].endswith(" 2500.0")
    end = header.index("seen s ago") + len("seen s ago")
    assert agent[:end].endswith(" 1234.5")
    assert reason == " " * len(LONG) + "  - broker unreachable"


def test_ids_of_every_length_keep_their_columns() -> None:
    for width in (1, 20, 40, 64, 200):
        node_id = "w" * width
        header, row = nodes_table([_node(node_id, "worker")])
        starts = _columns(header)
        assert starts[1] == max(width, len("node")) + 2
        assert row[starts[1] :].startswith("worker  online")
        assert row[: starts[1]] == node_id.ljust(starts[1])


def test_no_nodes_prints_the_header_alone() -> None:
    assert nodes_table([]) == [
        "node  kind  state  health  seen s ago  version  backlog KB  labels / containers"
    ]


def test_an_error_follows_the_containers() -> None:
    (_, row) = nodes_table([_node("w1", "worker", error="refused the package")])
    assert row.endswith("  ERROR: refused the package")
    assert row.startswith("w1    worker  online  ok      ")
