"""headwater_attached.json: components the console's palette attached, added by the loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headwater.common._exceptions import TopologyLoadError
from headwater.common.connectors import Tap
from headwater.common.connectors._steps import FunctionStep
from headwater.common.plan import load_topology
from headwater.common.plan._package_attached import ATTACHED_FILE

from .test_loader import FILE


def _with(tmp_path: Path, attached: object) -> Path:
    (tmp_path / "topo.py").write_text(FILE)
    (tmp_path / ATTACHED_FILE).write_text(json.dumps(attached))
    return tmp_path / "topo.py"


def test_attached_components_are_added_in_every_load(tmp_path: Path) -> None:
    file = _with(
        tmp_path,
        [
            {"name": "tap_1", "step": "tap", "inputs": {"numbers": "fields:n"}, "parallelism": 2},
            {"name": "sink_2", "step": "topo:Sink", "inputs": {"tap_1": "all"}},
        ],
    )
    t = load_topology(file)
    tap, sink = t.component("tap_1"), t.component("sink_2")
    assert (tap.factory, tap.parallelism, str(tap.inputs[0].grouping)) == (Tap, 2, "fields(n)")
    assert sink.factory is t.component("sink").factory and not sink.placement.is_edge
    assert [c.name for c in load_topology(file, domain="cloud").components][-2:] == [
        "tap_1",
        "sink_2",
    ]


@pytest.mark.parametrize(
    ("attached", "says"),
    [
        ({"name": "x"}, "a list of the attached components"),
        ([{"name": "sink", "step": "tap", "inputs": {"numbers": "shuffle"}}], "of that name"),
        ([{"name": "t", "step": "nope", "inputs": {"numbers": "shuffle"}}], "MODULE:CLASS"),
        ([{"name": "t", "step": "topo:Numbers", "inputs": {"numbers": "shuffle"}}], "not a Bolt"),
        ([{"name": "t", "step": "tap", "inputs": {"numbers": "fields:"}}], "grouping"),
        ([{"name": "t", "step": "map", "inputs": {"numbers": "all"}}], "fn is MODULE:FUNCTION"),
        ([{"name": "t", "step": "keyed", "fn": "a:b", "inputs": {"a": "all"}}], "key field"),
        ([{"name": "t", "step": "map", "fn": "topo:Sink", "inputs": {"numbers": "all"}}], "not a"),
        ([{"name": "t", "step": "tap", "inputs": {}}], "at least one component"),
        ([{"name": "t", "step": "tap", "inputs": {"a": "all"}, "parallelism": 0}], "from 1 to"),
        ([{"name": "t", "step": "tap", "inputs": {"a": "all"}, "placement": "moon"}], "cloud or"),
    ],
)
def test_a_malformed_sidecar_is_refused_with_the_reason(
    tmp_path: Path, attached: object, says: str
) -> None:
    with pytest.raises(TopologyLoadError, match=says):
        load_topology(_with(tmp_path, attached))


FNS = """
def double(row):
    return [row[0] * 2]


def positive(row):
    return row[0] > 0


def running_sum(total, row):
    total = (total or 0) + row[0]
    return total, [[row[0], total]]
"""


class _Ctx:
    def __init__(self) -> None:
        self.sent: list[list[object]] = []
        self.keyed: dict[object, object] = {}

    def emit(self, values: list[object]) -> None:
        self.sent.append(values)

    def keyed_state(self, name: str) -> dict[object, object]:
        return self.keyed


def test_a_function_of_the_package_runs_as_a_map_a_filter_or_a_keyed_step(
    tmp_path: Path,
) -> None:
    (tmp_path / "fns.py").write_text(FNS)
    file = _with(
        tmp_path,
        [
            {"name": "m", "step": "map", "fn": "fns:double", "inputs": {"numbers": "shuffle"}},
            {"name": "f", "step": "filter", "fn": "fns:positive", "inputs": {"m": "shuffle"}},
            {
                "name": "k",
                "step": "keyed",
                "fn": "fns:running_sum",
                "key": "n",
                "outputs": ["n", "total"],
                "inputs": {"f": "fields:n"},
            },
        ],
    )
    t = load_topology(file)
    fields = {c: [list(s.fields) for s in t.component(c).outputs] for c in ("m", "f", "k")}
    assert fields == {"m": [["n"]], "f": [["n"]], "k": [["n", "total"]]}
    got: dict[str, list[list[object]]] = {}
    for name in ("m", "f", "k"):
        step, ctx = t.component(name).factory(), _Ctx()
        assert isinstance(step, FunctionStep)
        step.open(ctx)  # type: ignore[arg-type]
        for n in (3, -1, 3):
            step.process(type("T", (), {"values": [n]})())
        got[name] = ctx.sent
    assert got == {"m": [[6], [-2], [6]], "f": [[3], [3]], "k": [[3, 3], [-1, -1], [3, 6]]}
    with pytest.raises(TopologyLoadError, match="no field 'x' to key by"):
        load_topology(
            _with(
                tmp_path,
                [
                    {
                        "name": "k",
                        "step": "keyed",
                        "fn": "fns:running_sum",
                        "key": "x",
                        "inputs": {"numbers": "shuffle"},
                    }
                ],
            )
        )
