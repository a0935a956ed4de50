"""Poison records in an instance: a record ``process`` raises on is retried, then dead-lettered."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import pytest

from headwater import DEAD_LETTERS, Bolt, Context, DeadLetter, Spout, Topology, Tuple, shuffle
from headwater.common.api._config import TOPOLOGY_RECORD_MAX_RETRIES, RuntimeConfig
from headwater.common.api._dead_letters import Retry, reason_of, short_traceback
from headwater.common.runtime._instance import Instance
from headwater.common.runtime._instance_metrics import report_metrics
from headwater.common.wire import Kind, data_rows, decode, encode, encode_frame, parse_frame

from ._opened import Opened


class Src(Spout):
    outputs = ("n",)

    def next_tuple(self) -> None:
        pass


class Flaky(Bolt):
    """Raises on 2 always, on 3 once, refuses 5; emits the rest."""

    outputs = ("n",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.calls: Counter[int] = Counter()

    def process(self, tup: Tuple) -> None:
        n = tup.values[0]
        self.calls[n] += 1
        if n == 2:
            raise ValueError("two is poison")
        if n == 3 and self.calls[3] == 1:
            raise RuntimeError("a transient failure")
        if n == 5:
            raise DeadLetter("five is refused")
        self.ctx.emit([n], anchors=[tup])
        self.ctx.ack(tup)


class Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


def _topology(mode: str, *, sink: bool = True, config: dict[str, Any] | None = None) -> Topology:
    t = (
        Topology("t", config={"topology.reliability.mode": mode, **(config or {})})
        .add_spout("src", Src)  # task 1
        .add_bolt("work", Flaky, inputs={"src": shuffle()})  # task 2
        .add_bolt("out", Sink, inputs={"work": shuffle()})  # task 3
    )
    return t.with_dead_letters("dead", Sink) if sink else t  # task 4


def _instance(topology: Topology, opened: Opened) -> Instance:
    return opened(topology, 2)


def _sent(inst: Instance) -> list[bytes]:
    inst.emitter.flush_all()
    frames = []
    while (raw := inst.gateway.outbox.get(timeout=0)) is not None:
        frames.append(raw)
    return frames


def _data(frames: list[bytes], stream: str) -> list[Any]:
    out: list[Any] = []
    for raw in frames:
        f = parse_frame(raw)
        if f.kind in (Kind.DATA, Kind.DATA_ROOTED, Kind.DATA_COLUMNS) and f.stream == stream:
            out.extend(data_rows(f))
    return out


def _controls(frames: list[bytes]) -> list[dict[str, Any]]:
    return [decode(parse_frame(r).payload) for r in frames if r[0] == Kind.CONTROL]


def _feed(inst: Instance, values: list[int]) -> None:
    entries = encode([[v] for v in values])
    inst.gate.handle(encode_frame(Kind.DATA, 2, 1, len(values), b"default", entries))


@pytest.mark.parametrize("mode", ["ATMOST_ONCE", "EFFECTIVELY_ONCE"])
def test_a_poison_record_is_retried_then_dead_lettered_and_the_rest_flows(
    mode: str, opened: Opened
) -> None:
    inst = _instance(_topology(mode), opened)
    _feed(inst, [1, 2, 3, 4, 5, 6])
    frames = _sent(inst)
    bolt = inst.component_obj
    assert isinstance(bolt, Flaky)
    assert _data(frames, "default") == [[1], [3], [4], [6]]  # 3 worked on its second attempt
    dead = _data(frames, DEAD_LETTERS)
    assert [(d[0], d[1], d[3]) for d in dead] == [
        ("work", "ValueError: two is poison", [2]),
        ("work", "five is refused", [5]),
    ]
    assert dead[0][2].endswith("ValueError: two is poison\n") and "in process" in dead[0][2]
    assert dead[1][2] == ""  # DeadLetter: a reason, no traceback
    assert bolt.calls == {1: 1, 2: 4, 3: 2, 4: 1, 5: 1, 6: 1}  # 3 retries; none for DeadLetter
    assert (inst.outputs.retry.dead_letters, inst.outputs.retry.retries, inst.counts.executed) == (
        2,
        4,
        6,
    )
    reports = [c for c in _controls(frames) if c["type"] == "dead_letter"]
    assert [(r["component"], r["message"].split(";")[0]) for r in reports] == [
        ("work", "dead letter: ValueError: two is poison"),
        ("work", "dead letter: five is refused"),
    ]
    report_metrics(inst)
    metrics = decode(parse_frame(inst.gateway.metrics_out[-1]).payload)
    assert (metrics["dead_letters"], metrics["record_retries"]) == (2, 4)


def test_retries_follow_the_config(opened: Opened) -> None:
    inst = _instance(_topology("ATMOST_ONCE", config={TOPOLOGY_RECORD_MAX_RETRIES: 0}), opened)
    _feed(inst, [2, 3])
    frames = _sent(inst)
    assert [d[3] for d in _data(frames, DEAD_LETTERS)] == [[2], [3]]  # no second attempt
    assert inst.outputs.retry.retries == 0


def test_at_least_once_acks_the_tuple_after_its_dead_letter(opened: Opened) -> None:
    inst = _instance(_topology("ATLEAST_ONCE"), opened)
    entries = encode([[[2], [1, 77, 5]], [[4], [1, 78, 6]]])  # values, (spout task, root, edge)
    inst.gate.handle(encode_frame(Kind.DATA_ROOTED, 2, 1, 2, b"default", entries))
    frames = _sent(inst)
    dead = [parse_frame(r) for r in frames if parse_frame(r).stream == DEAD_LETTERS]
    assert [f.kind for f in dead] == [Kind.DATA_ROOTED]  # anchored: the tree goes on through it
    assert inst.counts.acked == 2  # the dead-lettered tuple and the good one
    acks = [decode(parse_frame(r).payload) for r in frames if r[0] == Kind.ACK]
    assert {root for a in acks for root in a[::2]} == {77, 78}


def test_without_a_sink_dead_letters_are_logged(
    opened: Opened, caplog: pytest.LogCaptureFixture
) -> None:
    inst = _instance(_topology("ATMOST_ONCE", sink=False), opened)
    _feed(inst, [2, 4])
    frames = _sent(inst)
    assert _data(frames, DEAD_LETTERS) == [] and _data(frames, "default") == [[4]]
    assert "no dead-letter sink" in caplog.text and "[2]" in caplog.text
    assert inst.outputs.retry.dead_letters == 1


def test_reports_are_bounded_but_every_dead_letter_counts() -> None:
    now = [0.0]
    sent: list[Any] = []
    retry = Retry(0, lambda *a: sent.append(a), logging.getLogger("t"), clock=lambda: now[0])
    shown = 0
    for _ in range(100):
        retry("c", lambda: None, ValueError("x"), 1)
        shown += retry.should_report()
    assert (len(sent), retry.dead_letters, shown) == (100, 100, 10)
    now[0] = 1.5
    assert retry.should_report() and not retry.should_report()


def test_a_short_traceback_keeps_the_innermost_frames() -> None:
    def deep(n: int) -> None:
        deep(n + 1)

    try:
        deep(0)
    except RecursionError as exc:
        tb = short_traceback(exc)
        assert reason_of(exc).startswith("RecursionError: maximum recursion depth")
    assert tb.count("in deep") <= 5 and len(tb) <= 2003


def test_max_retries_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match=TOPOLOGY_RECORD_MAX_RETRIES):
        RuntimeConfig.from_mapping({TOPOLOGY_RECORD_MAX_RETRIES: -1})
    assert RuntimeConfig.from_mapping({}).record_max_retries == 3
