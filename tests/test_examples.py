"""The examples as a newcomer runs them: what they do with the defaults they ship with."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from headwater import Reliability, Topology
from headwater.common.plan._loader import load_topology
from headwater.testing import TestContext

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FILES = sorted(EXAMPLES.rglob("*.py"))
# files beside the topologies: their steps and connectors, the sensors' script, the model's
# training (a Spark job)
HELPERS = {
    "energy": {
        *("energy_steps.py", "energy_io.py", "energy_data.py", "meters.py"),
        *("daily_report.py", "energy_model.py"),
    },
    "shop": {"revenue.py"},
    "heron": {"heron_components.py", "integration_components.py", "integration_core.py"},
    "iot": {
        *("iot_steps.py", "iot_io.py", "sensors.py"),
        *("anomaly_train.py", "anomaly_fit.py", "anomaly_eval.py"),
    },
}
# heronpy-style examples take their topology's name (and more) as arguments, as Heron's do
ARGS = {"integration_topology.py": ["FieldsGrouping", "result.json"]}


def _headwater_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Every ``headwater`` module path the file imports, with its line (``from headwater
    import x`` names ``headwater.x``: x may be a module)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return [(line, name) for line, name in out if name.split(".")[0] == "headwater"]


@pytest.mark.parametrize("file", FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_examples_import_only_public_headwater_modules(file: Path) -> None:
    """What a user reads first imports what a user may import: no module path with a part
    starting with ``_`` (``headwater._demo``, ``headwater.common.dsl._ops``)."""
    tree = ast.parse(file.read_text(), str(file))
    private = [
        f"{file.relative_to(ROOT)}:{line}: {name}"
        for line, name in _headwater_imports(tree)
        if any(part.startswith("_") for part in name.split("."))
    ]
    assert not private, private


def test_the_import_check_sees_private_modules() -> None:
    tree = ast.parse(
        "import headwater._demo.x\nfrom headwater.common.dsl._ops import Op\n"
        "from headwater import _cli, Topology\nfrom . import _local\nimport json\n"
    )
    names = [name for _, name in _headwater_imports(tree)]
    assert names == [
        "headwater._demo.x",
        "headwater.common.dsl._ops.Op",
        "headwater._cli",
        "headwater.Topology",
    ]


def test_the_helper_lists_name_files_that_exist() -> None:
    for folder, names in HELPERS.items():
        assert names <= {p.name for p in (EXAMPLES / folder).glob("*.py")}


@pytest.mark.parametrize(
    "file",
    [f for f in FILES if f.name not in HELPERS.get(f.parent.name, set())],
    ids=lambda p: str(p.relative_to(EXAMPLES)),
)
def test_every_example_topology_loads(
    file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each topology file defines its topology, as ``headwater run`` loads it (its folder
    on ``sys.path`` for its siblings), without a broker or a cluster."""
    monkeypatch.setenv("IOT_LOG", str(tmp_path / "log"))
    monkeypatch.setenv("IOT_OUT", str(tmp_path / "out"))
    monkeypatch.setenv("ENERGY_LOG", str(tmp_path / "log"))
    monkeypatch.setenv("ENERGY_OUT", str(tmp_path / "out"))
    monkeypatch.setenv("SHOP_OUT", str(tmp_path / "out"))
    if file.parent.name == "heron":
        monkeypatch.setenv("HEADWATER_TOPOLOGY_ARGS", json.dumps(ARGS.get(file.name, [file.stem])))
    topology = load_topology(file)
    assert isinstance(topology, Topology) and topology.components
    assert not (tmp_path / "out").exists()  # loading writes nothing


@pytest.mark.parametrize("name", ["pipeline.py", "pipeline_dsl.py"])
def test_the_iot_pipelines_run_parse_to_anomaly_on_the_edge(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both versions: exactly once, the edge half on every agent (no selector), the
    windows, the site aggregates and the landing zone in the cloud."""
    monkeypatch.setenv("IOT_LOG", str(tmp_path / "log"))
    monkeypatch.setenv("IOT_OUT", str(tmp_path / "out"))
    topology = load_topology(EXAMPLES / "iot" / name)
    assert topology.config["topology.reliability.mode"] == Reliability.EXACTLY_ONCE.value
    where = {c.name: (c.placement.where, c.placement.selector) for c in topology.components}
    edge = {n for n, (w, selector) in where.items() if w == "edge" and not selector}
    if name == "pipeline.py":
        assert edge == {"readings", "parse", "dedup", "smooth", "anomaly"}
        assert set(where) - edge == {
            *("windows", "site", "site_windows"),
            *("land_readings", "land_windows", "dead_letters"),
        }
    else:  # fused on the edge: readings..by_sensor, then the keyed steps on one key
        steps = {c.name: c.config.get("headwater.dsl.steps") for c in topology.components}
        assert {n: steps[n] for n in edge} == {
            "readings": ("readings", "parse", "by_sensor"),
            "last_seq": ("last_seq", "ewma", "welford"),
        }
        assert set(where) - edge == {
            *("windows", "by_site_window", "site_windows", "sink"),
            *("readings_out", "land_readings", "land_windows", "dead_letters"),
        }


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_word_count_spout_is_paced_so_a_run_keeps_counting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """By default each spout task emits at most 50 lines a second: the 3,000 lines of the
    two tasks take 30 s, longer than docs/run.md's 20 s run (a clock of the test's own)."""
    monkeypatch.delenv("WORDCOUNT_RATE", raising=False)
    monkeypatch.delenv("WORDCOUNT_REPEAT", raising=False)
    wordcount = _load(ROOT / "examples/iot/wordcount.py", "wordcount_paced")
    now = [1000.0]
    monkeypatch.setattr(wordcount.time, "monotonic", lambda: now[0])
    ctx = TestContext(wordcount.topology, "lines")
    spout = wordcount.Lines()
    spout.open(ctx)
    assert len(spout.todo) == 1500  # its half of 500 x 6 lines
    for _ in range(100):  # however often it is asked within one instant: one line
        spout.next_tuple()
    assert len(ctx.emitted) == 1
    now[0] += 1.0
    for _ in range(100):
        spout.next_tuple()
    assert len(ctx.emitted) == 51  # 50 a second
    now[0] += 3600.0  # after a long pause (deactivated), a second's lines at most
    for _ in range(1000):
        spout.next_tuple()
    assert len(ctx.emitted) == 101


def test_the_sensor_example_imports_no_private_module() -> None:
    """It shows what a device runs: no module path with a part starting with ``_``."""
    private: list[str] = []
    for path in [ROOT / "examples/iot/sensors.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if any(part.startswith("_") and part != "__future__" for part in name.split(".")):
                    private.append(f"{path.relative_to(ROOT)}: {name}")
    assert private == []


def test_the_sensor_example_publishes_readings_whose_seq_goes_on_across_runs(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    import json
    import subprocess
    import sys
    import threading

    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    from tests._wait import wait_for

    got: list[dict[str, object]] = []
    subscribed = threading.Event()
    sub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="test-example-subscriber")
    sub.on_connect = lambda c, *_: c.subscribe("sensors/#", qos=1)
    sub.on_subscribe = lambda *_: subscribed.set()
    sub.on_message = lambda _c, _u, m: got.append({"topic": m.topic, **json.loads(m.payload)})
    sub.connect(*mosquitto)
    sub.loop_start()
    try:
        assert subscribed.wait(10)
        run = [sys.executable, str(ROOT / "examples/iot/sensors.py"), "--broker"]
        run += ["{}:{}".format(*mosquitto), "--count", "3", "--interval", "0", "--site", "north"]
        for _ in range(2):
            done = subprocess.run(
                run, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
            )
            assert done.returncode == 0, done.stderr
        wait_for(lambda: len(got) >= 6, 20, "6 readings")
    finally:
        sub.disconnect()
        sub.loop_stop()
    assert done.stdout.splitlines()[0].startswith("sensors/north/t0 seq 3 value ")
    assert [(r["topic"], r["site"], r["sensor"], r["seq"]) for r in got] == [
        ("sensors/north/t0", "north", "t0", seq) for seq in range(6)
    ]
    assert all(set(r) == {"topic", "site", "sensor", "seq", "ts", "value", "unit"} for r in got)
    assert (tmp_path / "north-t0.seq").read_text() == "6\n"
