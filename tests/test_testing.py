"""headwater.testing: the in-memory test kit (a context, a source, a sink, a clock, a runner)."""

from __future__ import annotations

import doctest
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import headwater.testing
from headwater import (
    DEAD_LETTERS,
    Bolt,
    Context,
    CustomGrouping,
    DeadLetter,
    EmitError,
    Reliability,
    Spout,
    Stream,
    Topology,
    Tuple,
    all_tasks,
    custom,
    direct,
    fields,
    global_,
    shuffle,
)
from headwater.common.connectors import TransactionalFileSink
from headwater.common.wire._control import Commit
from headwater.dsl import Pipeline, Tumbling
from headwater.placement import cloud, edge
from headwater.testing import LocalRun, ManualClock, TestContext, TestSink, TestSource, run_main

from ._iot import iot_steps as steps

ROOT = Path(__file__).resolve().parent.parent


class Seen(Bolt):
    """Records (its task, the values) of every tuple into ``out``; acks it."""

    def __init__(self, out: list[Any]) -> None:
        self.out = out

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.out.append((self.ctx.task_id, tup.values))
        self.ctx.ack(tup)


def source(items: list[Any], *fields_: str, parallelism: int = 1) -> Topology:
    return Topology("t").add_spout(
        "src", partial(TestSource, items), outputs=fields_ or ("value",), parallelism=parallelism
    )


# -- TestContext ------------------------------------------------------------------------


def test_a_lone_context_records_emits_per_stream_acks_counters_and_system_calls() -> None:
    ctx = TestContext()
    assert (ctx.task_id, ctx.component, ctx.component_index, ctx.component_tasks("test")) == (
        1,
        "test",
        0,
        [1],
    )
    assert ctx.emit([1], need_task_ids=True) == []
    ctx.emit([2], "other", tup_id=7)
    ctx.emitter()([3])
    ctx.emitter_all("other")([[4], [5]])
    ctx.emitter_columns("other")([[6, 7], ["x", "y"]])
    tup = Tuple(None, "src", "default", 1, [1], 0.0)
    ctx.ack(tup)
    ctx.fail(tup)
    ctx.incr("n")
    ctx.incr("n", 2)
    ctx.system(Commit(id=3))
    assert ctx.values() == [[1], [3]]
    assert ctx.values("other") == [[2], [4], [5], [6, "x"], [7, "y"]]
    assert ctx.emitted[1].tup_id == 7
    assert (ctx.acked, ctx.failed, ctx.counters) == ([tup], [tup], {"n": 3})
    assert ctx.system_messages == [Commit(id=3)]
    assert ctx.keyed_state("k") is ctx.keyed_state("k")
    with pytest.raises(AttributeError, match="without a topology"):
        _ = ctx.topology
    with pytest.raises(EmitError, match="give each as many"):  # as the runtime, before any
        ctx.emitter_columns()([["a", "b", "c"], [1, 2]])
    assert ctx.values() == [[1], [3]]


def test_a_context_in_a_topology_routes_as_the_runtime_does() -> None:
    t = (
        source([], "key", "n")
        .add_bolt("by_key", Bolt, parallelism=3, inputs={"src": fields("key")})
        .add_bolt("every", Bolt, parallelism=2, inputs={"src": all_tasks()})
    )
    ctx = TestContext(t, "src", config={"topology.record.max.retries": 1})
    assert ctx.task_id == 1 and ctx.component_tasks("by_key") == [2, 3, 4]
    assert ctx.config["topology.record.max.retries"] == 1
    first = ctx.emit(["a", 1], need_task_ids=True)
    assert first is not None and len(first) == 3 and first[-2:] == [5, 6]
    assert ctx.emit(["a", 2], need_task_ids=True) == first  # the same key, the same task
    with pytest.raises(EmitError, match="undeclared stream 'nope'"):
        ctx.emit([1], "nope")


def test_retry_record_retries_then_dead_letters() -> None:
    ctx = TestContext()
    calls = Counter[str]()

    def attempt() -> None:
        calls["n"] += 1
        raise ValueError("bad")

    assert ctx.retry_record("step", attempt, ValueError("bad"), {"r": 1}) is False
    assert calls["n"] == 3 and ctx.retries == 3
    assert [(d[0], d[1], d[3]) for d in ctx.dead_letters] == [("step", "ValueError: bad", {"r": 1})]
    assert ctx.retry_record("step", attempt, DeadLetter("refused"), 2) is False
    assert calls["n"] == 3 and ctx.dead_letters[1] == ["step", "refused", "", 2]


# -- TestSource, TestSink and run_main ---------------------------------------------------


def test_source_to_sink_in_order_with_tuples_spread_into_fields() -> None:
    out: list[Any] = []
    t = source([("a", 1), ["b", 2], ("c", 3)], "k", "n").add_bolt(
        "sink", partial(TestSink, out), inputs={"src": shuffle()}
    )
    run = run_main(t)
    assert out == [["a", 1], ["b", 2], ["c", 3]]
    assert run.emitted("src") == out
    (src,) = run.instances("src")
    assert isinstance(src, TestSource) and src.exhausted()


def test_groupings_shuffle_fields_all_global_direct_and_custom() -> None:
    class Evens(CustomGrouping):
        def prepare(self, context: Any, component: str, stream: str, tasks: list[int]) -> None:
            self.tasks = tasks

        def choose_tasks(self, values: list[Any]) -> list[int]:
            return [self.tasks[values[0] % 2]]

    class Direct(Spout):
        outputs = (Stream(("n",), direct=True),)

        def open(self, ctx: Context) -> None:
            self.ctx, self.left = ctx, [0, 1, 2, 3]

        def next_tuple(self) -> None:
            if self.left:
                n = self.left.pop(0)
                targets = self.ctx.component_tasks("direct")
                self.ctx.emit([n], direct_task=targets[n % len(targets)])

    got: dict[str, list[Any]] = {g: [] for g in ("shuffle", "fields", "all", "global", "custom")}
    direct_got: list[Any] = []
    t = source(list(range(6)), "n").add_spout("d", Direct)
    for name, grouping in (
        ("shuffle", shuffle()),
        ("fields", fields("n")),
        ("all", all_tasks()),
        ("global", global_()),
        ("custom", custom(Evens())),
    ):
        t = t.add_bolt(name, partial(Seen, got[name]), parallelism=2, inputs={"src": grouping})
    t = t.add_bolt("direct", partial(Seen, direct_got), parallelism=2, inputs={"d": direct()})
    run = run_main(t)
    tasks = {c: run.ids[c] for c in ("shuffle", "fields", "all", "global", "custom", "direct")}
    shuffled = Counter(task for task, _ in got["shuffle"])
    assert sorted(shuffled) == tasks["shuffle"] and set(shuffled.values()) == {3}  # round robin
    by_key: dict[int, set[int]] = {}
    for task, (n,) in got["fields"]:
        by_key.setdefault(n, set()).add(task)
    assert all(len(ts) == 1 for ts in by_key.values()) and len(by_key) == 6
    assert Counter(task for task, _ in got["all"]) == {task: 6 for task in tasks["all"]}
    assert {task for task, _ in got["global"]} == {tasks["global"][0]}
    assert all(task == tasks["custom"][n % 2] for task, (n,) in got["custom"])
    assert all(task == tasks["direct"][n % 2] for task, (n,) in direct_got)
    assert len(direct_got) == 4


def test_a_source_with_parallelism_splits_its_items() -> None:
    out: list[Any] = []
    t = source(list(range(10)), "n", parallelism=3).add_bolt(
        "sink", partial(TestSink, out), inputs={"src": shuffle()}
    )
    run = run_main(t)
    assert sorted(v for (v,) in out) == list(range(10))
    mine = [s.items[s.ctx.component_index :: 3] for s in run.instances("src")]  # type: ignore[union-attr]
    assert mine == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]


class FailOnce(Bolt):
    """Fails the first time it sees each value, acks it after."""

    outputs = ("n",)

    def __init__(self) -> None:
        self.seen: set[Any] = set()

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        if tup.values[0] not in self.seen:
            self.seen.add(tup.values[0])
            self.ctx.fail(tup)
            return
        self.ctx.emit(tup.values, anchors=[tup])
        self.ctx.ack(tup)


def test_at_least_once_a_failed_tree_is_replayed_and_acked_after_its_leaves() -> None:
    out: list[Any] = []
    t = (
        Topology("t", config={"topology.reliability.mode": Reliability.AT_LEAST_ONCE.value})
        .add_spout("src", partial(TestSource, ["a", "b"]), outputs=("n",))
        .add_bolt("flaky", FailOnce, inputs={"src": shuffle()})
        .add_bolt("sink", partial(TestSink, out), inputs={"flaky": shuffle()})
    )
    run = run_main(t)
    (src,) = run.instances("src")
    assert isinstance(src, TestSource)
    assert (src.failed, sorted(src.acked), out, run.pending) == ([0, 1], [0, 1], [["a"], ["b"]], 0)


def test_a_tree_never_acked_stays_pending_and_a_tracked_emit_without_acking_is_acked() -> None:
    class Keep(Bolt):
        def process(self, tup: Tuple) -> None:
            pass  # neither acks nor fails

    def topology(mode: Reliability) -> Topology:
        return (
            Topology("t", config={"topology.reliability.mode": mode.value})
            .add_spout("src", partial(TestSource, [1, 2, 3]), outputs=("n",))
            .add_bolt("keep", Keep, inputs={"src": shuffle()})
        )

    run = run_main(topology(Reliability.AT_LEAST_ONCE))
    assert run.pending == 3 and run.instances("src")[0].acked == []  # type: ignore[union-attr]
    run = run_main(topology(Reliability.AT_MOST_ONCE))
    assert run.pending == 0 and run.instances("src")[0].acked == [0, 1, 2]  # type: ignore[union-attr]


def test_a_raising_bolt_retries_then_dead_letters_to_the_sink_and_goes_on() -> None:
    calls: Counter[int] = Counter()

    class Picky(Bolt):
        outputs = ("n",)

        def open(self, ctx: Context) -> None:
            self.ctx = ctx

        def process(self, tup: Tuple) -> None:
            n = tup.values[0]
            calls[n] += 1
            if n == 2:
                raise ValueError("two")
            if n == 3:
                raise DeadLetter("three refused")
            self.ctx.emit([n])

    out: list[Any] = []
    dead: list[Any] = []
    t = (
        source([1, 2, 3, 4], "n")
        .add_bolt("picky", Picky, inputs={"src": shuffle()})
        .add_bolt("sink", partial(TestSink, out), inputs={"picky": shuffle()})
        .with_dead_letters("dead", partial(TestSink, dead))
    )
    run = run_main(t)
    assert out == [[1], [4]]
    assert calls == {1: 1, 2: 4, 3: 1, 4: 1}  # 1 + 3 retries; DeadLetter at once
    assert [(d[0], d[1], d[3]) for d in dead] == [
        ("picky", "ValueError: two", [2]),
        ("picky", "three refused", [3]),
    ]
    assert "ValueError: two" in dead[0][2]
    assert run.dead_letters == dead
    assert run.emitted("picky", DEAD_LETTERS) == dead


def test_an_exception_outside_process_reaches_the_test() -> None:
    class Broken(Spout):
        def next_tuple(self) -> None:
            raise RuntimeError("broken spout")

    with pytest.raises(RuntimeError, match="broken spout"):
        run_main(Topology("t").add_spout("s", Broken))


def test_an_endless_spout_stops_after_max_calls() -> None:
    class Endless(Spout):
        outputs = ("n",)

        def open(self, ctx: Context) -> None:
            self.ctx = ctx

        def next_tuple(self) -> None:
            self.ctx.emit([1])

    run = run_main(Topology("t").add_spout("s", Endless), max_calls=50)
    assert len(run.emitted("s")) == 50


def test_ticks_follow_the_manual_clock() -> None:
    ticks: list[float] = []

    class Ticking(Bolt):
        def process(self, tup: Tuple) -> None:
            pass

        def on_tick(self, tup: Tuple) -> None:
            assert tup.is_tick
            ticks.append(clock.monotonic())

    clock = ManualClock(start=0.0)
    t = source([1], "n").add_bolt(
        "b", Ticking, inputs={"src": shuffle()}, config={"topology.tick.tuple.freq.secs": 2}
    )
    with LocalRun(t, clock=clock) as run:
        run.run()
        run.advance(1.0)
        assert ticks == []
        run.advance(4.5)
        assert ticks == [5.5, 5.5]  # the ticks due at 2 and 4, delivered when the clock passed
    assert run.context("b").task_id == 2


def test_checkpoint_calls_every_task_and_run_main_commits_an_exactly_once_topology(
    tmp_path: Path,
) -> None:
    calls: list[tuple[str, int]] = []

    class Marks(Bolt):
        def process(self, tup: Tuple) -> None:
            pass

        def on_restore(self, checkpoint_id: int) -> None:
            calls.append(("restore", checkpoint_id))

        def on_checkpoint(self, checkpoint_id: int) -> None:
            calls.append(("checkpoint", checkpoint_id))

        def on_commit(self, checkpoint_id: int) -> None:
            calls.append(("commit", checkpoint_id))

    t = (
        Topology("t", config={"topology.reliability.mode": Reliability.EXACTLY_ONCE.value})
        .add_spout("src", partial(TestSource, [("a", 1), ("b", 2)]), outputs=("k", "n"))
        .add_bolt("marks", Marks, inputs={"src": shuffle()})
        .add_bolt("files", partial(TransactionalFileSink, tmp_path), inputs={"src": shuffle()})
    )
    run_main(t)
    assert calls == [("restore", 0), ("checkpoint", 1), ("commit", 1)]
    (part,) = sorted(tmp_path.glob("part-*"))
    assert [json.loads(line) for line in part.read_text().splitlines()] == [["a", 1], ["b", 2]]


# -- DSL pipelines and the examples -----------------------------------------------------


def test_a_dsl_pipeline_with_windows_runs_to_the_end_of_time() -> None:
    """A bounded source ends with the end of time: every window closes, the last one too."""
    out: list[Any] = []
    p = Pipeline("p")
    (
        p.source("events", partial(TestSource, [("a", 1), ("b", 2), ("a", 3), ("a", 12)]))
        .map("one", lambda e: [e[0], e[1], 1])
        .key_by("by", lambda e: e[0])
        .window("w", Tumbling(10), timestamp=lambda e: e[1])
        .reduce("count", lambda a, b: [a[0], b[1], a[2] + b[2]])
        .sink("out", out.append)
    )
    run_main(p)
    assert [(w["key"], w["start"], w["value"][2]) for w in out] == [
        ("a", 0, 2),
        ("b", 0, 1),
        ("a", 10, 1),
    ]


def reading(site: str, sensor: str, seq: int, ts: int, value: float) -> tuple[str, bytes, int]:
    payload = {"site": site, "sensor": sensor, "seq": seq, "ts": ts, "value": value}
    return ("sensors/x", json.dumps(payload).encode(), ts)


def _parse(record: list[Any]) -> list[Any]:
    topic, payload, received_ms = record
    return steps.parse(topic, payload, received_ms)


def test_the_iot_pipeline_steps_give_exact_site_windows_and_dead_letters() -> None:
    """The IoT example's DSL pipeline (``examples/iot/pipeline_dsl.py``), its source and
    sinks swapped for the kit's: duplicates dropped, a malformed reading dead-lettered,
    each sensor's 10 s window closed by its next reading and merged per site."""
    records = [
        reading("s1", "a", 1, 1_000, 1.0),
        reading("s1", "b", 1, 2_000, 3.0),
        reading("s1", "a", 2, 5_000, 2.0),
        reading("s1", "a", 2, 5_000, 2.0),  # a QoS 1 duplicate
        ("sensors/x", b"not json", 0),
        reading("s1", "a", 3, 12_000, 4.0),  # closes a's window 0
        reading("s1", "b", 2, 13_000, 5.0),  # closes b's window 0
        reading("s2", "c", 1, 1_000, 7.0),
        reading("s2", "c", 2, 11_000, 8.0),  # closes c's window 0
    ]
    out: list[Any] = []
    dead: list[Any] = []
    p = Pipeline("iot", config={"topology.reliability.mode": Reliability.EXACTLY_ONCE.value})
    (
        p.source("readings", partial(TestSource, records), placement=edge())
        .map("parse", _parse)
        .key_by("by_sensor", lambda row: row[1])
        .flat_map_by_key("last_seq", steps.dedup)
        .flat_map_by_key("ewma", steps.smooth)
        .flat_map_by_key("welford", steps.anomaly)
        .window(
            "windows",
            Tumbling(steps.WINDOW_MS),
            timestamp=steps.reading_ts,
            clock="key",
            placement=cloud(),
        )
        .aggregate("sensor_windows", steps.window_zero, steps.window_add)
        .map("window_rows", steps.window_row)
        .key_by("by_site_window", steps.site_key)
        .flat_map_by_key("site_windows", steps.site_window)
        .to("sink", partial(TestSink, out), key=True)
    )
    p.dead_letters("dead_letters", partial(TestSink, dead))
    run_main(p)
    # [key, [key, site, window, sensors, count, mean, min, max, anomalies]]
    assert out == [
        ["s1/0", ["s1/0", "s1", 0, 1, 2, 1.5, 1.0, 2.0, 0]],
        ["s1/0", ["s1/0", "s1", 0, 2, 3, 2.0, 1.0, 3.0, 0]],
        ["s2/0", ["s2/0", "s2", 0, 1, 1, 7.0, 7.0, 7.0, 0]],
    ]
    assert [(d[0], d[3]) for d in dead] == [("parse", ["sensors/x", b"not json", 0])]
    assert dead[0][1].startswith("Expecting value")


def test_the_word_count_example_counts_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORDCOUNT_REPEAT", "7")
    monkeypatch.setenv("WORDCOUNT_RATE", "0")  # unpaced
    monkeypatch.delenv("WORDCOUNT_OUTPUT", raising=False)
    spec = importlib.util.spec_from_file_location("wordcount", ROOT / "examples/iot/wordcount.py")
    assert spec is not None and spec.loader is not None
    wordcount = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wordcount)
    run = run_main(wordcount.topology)
    counts: Counter[str] = Counter()
    for count in run.instances("count"):
        counts.update(count.counts)  # type: ignore[union-attr]
    assert counts == wordcount.expected_counts(7)
    assert counts["gateway"] == 4 * 7
    assert run.pending == 0


# -- the module itself -------------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [headwater.testing, headwater.testing._components, headwater.testing._run],
)
def test_examples_in_the_docs(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0


def test_the_kit_starts_no_process_and_loads_no_process_runtime() -> None:
    code = (
        "import sys\n"
        "import headwater.testing\n"
        "names = ('_instance', '_stmgr', '_container', '_procs', '_node', '_gateway')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'rocksdict')\n"
        "             or m.rpartition('.')[2] in names)\n"
        "print(bad)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_readme_example_runs_as_written() -> None:
    """docs/testing.md's first example (moved there from the README), run as written."""
    doc = (ROOT / "docs" / "testing.md").read_text()
    section = doc[doc.index("## Test a topology") :]
    code = section[section.index("```python\n") + 10 : section.index("```\n", 10)]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/testing.md", "exec"), namespace)
    tests = [fn for name, fn in namespace.items() if name.startswith("test_")]
    assert len(tests) == 3
    for test in tests:
        test()


def test_a_pipeline_reading_a_durable_log_runs_in_the_kit(tmp_path: Path) -> None:
    from headwater.common.connectors._log_spout import append_records

    append_records(tmp_path, 0, [[{"n": i}] for i in range(5)])
    out: list[Any] = []
    p = Pipeline("logged")
    p.from_log("src", str(tmp_path), 1).map("n", lambda r: r["n"]).sink("out", out.append)
    run_main(p, max_calls=50)
    assert sorted(out) == [0, 1, 2, 3, 4]
