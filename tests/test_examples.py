"""The examples as a newcomer runs them: what they do with the defaults they ship with."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from headwater.testing import TestContext

ROOT = Path(__file__).resolve().parent.parent


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
    two tasks take 30 s, longer than the README's 20 s run (a clock of the test's own)."""
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
