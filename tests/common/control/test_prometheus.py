"""headwater.common.control._prometheus: a topology master's families, over fixed inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from headwater import Bolt, Reliability, Spout, Topology, shuffle
from headwater.common._clock import ManualClock
from headwater.common._prometheus import Exposition, Families, FamilyCollector
from headwater.common.control import TopologyMaster
from headwater.common.control._prometheus import CheckpointFigures, add_topologies
from headwater.common.plan import pack_round_robin
from headwater.common.wire.proto import runtime_pb2 as pb

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Source(Spout):
    outputs = ("n",)

    def next_tuple(self) -> None: ...


class Sink(Bolt):
    def process(self, tup: object) -> None: ...


def _topology(mode: Reliability) -> Topology:
    return (
        Topology("t", config={"topology.reliability.mode": mode.value})
        .add_spout("src", Source)
        .add_bolt("sink", Sink, inputs={"src": shuffle()})
    )


def _registered(tmp_path: Path, clock: ManualClock, mode: Reliability) -> TopologyMaster:
    topology = _topology(mode)
    tm = TopologyMaster(topology, pack_round_robin(topology, 2), tmp_path / "state", clock=clock)
    for c in range(2):
        info = pb.ContainerInfo(container=c, stmgr_address=f"127.0.0.1:{9000 + c}", incarnation=1)
        tm.register(pb.RegisterRequest(topology="t", container=info))
        if mode is Reliability.EXACTLY_ONCE:
            tm.ack_restore(pb.RestoreAck(topology="t", container=c, epoch=tm.epoch, ok=True))
    return tm


def _beat(tm: TopologyMaster, container: int, metrics: list[tuple[str, str, float]]) -> None:
    tm.heartbeat(
        pb.Heartbeat(
            topology="t",
            container=container,
            incarnation=1,
            metrics=[pb.Metric(scope=s, name=n, value=v) for s, n, v in metrics],
        )
    )


def scrape(fill: FamilyCollector) -> tuple[Samples, dict[str, str]]:
    """Every sample of a rendering, parsed back: (name, labels) -> value; and each type."""
    text = Exposition(fill).render().decode()
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, f"{key} twice"
            samples[key] = s.value
    return samples, types


def _l(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


def test_tasks_components_and_stream_managers_carry_their_labels(tmp_path: Path) -> None:
    clock = ManualClock()
    tm = _registered(tmp_path, clock, Reliability.AT_LEAST_ONCE)
    src, sink = (i for i in tm.plan.instances)  # src: task 1, sink: task 2
    assert (src.component, sink.component) == ("src", "sink")
    _beat(
        tm,
        src.container,
        [
            (f"task:{src.task_id}", "emitted", 40.0),
            (f"task:{src.task_id}", "emitted:n", 40.0),
            (f"task:{src.task_id}", "backpressure_ms", 1500.0),
            (f"task:{src.task_id}", "execute_latency_us", 250.0),
            (f"task:{src.task_id}", "user:readings", 7.0),
            (f"task:{src.task_id}", "something_new", 3.0),
            (f"container:{src.container}", "bytes_out", 4096.0),
            (f"container:{src.container}", "buffer_bytes", 12.0),
            (f"container:{src.container}", "throttled_ms", 2500.0),
            (f"container:{src.container}", "log_committed:/var/log/ingest#p0", 99.0),
        ],
    )
    _beat(tm, sink.container, [(f"task:{sink.task_id}", "executed", 39.0)])
    clock.advance(2.5)
    samples, types = scrape(FamilyCollector(lambda f: add_topologies(f, [tm], "cloud")))

    top = {"topology": "t", "domain": "cloud"}
    src_task = {
        **top,
        "component": "src",
        "task": str(src.task_id),
        "container": str(src.container),
    }
    sink_task = {
        **top,
        "component": "sink",
        "task": str(sink.task_id),
        "container": str(sink.container),
    }
    assert samples[("headwater_component_emitted_total", _l(**top, component="src"))] == 40.0
    assert samples[("headwater_component_executed_total", _l(**top, component="sink"))] == 39.0
    assert (
        samples[("headwater_component_backpressure_seconds_total", _l(**top, component="src"))]
        == 1.5
    )
    assert samples[("headwater_task_emitted_total", _l(**src_task))] == 40.0
    assert samples[("headwater_task_executed_total", _l(**sink_task))] == 39.0
    assert samples[("headwater_task_execute_latency_seconds", _l(**src_task))] == 0.00025
    assert samples[("headwater_task_stream_emitted_total", _l(**src_task, stream="n"))] == 40.0
    assert samples[("headwater_task_user_counter_total", _l(**src_task, counter="readings"))] == 7.0
    user = _l(**top, component="src", counter="readings")
    assert samples[("headwater_component_user_counter_total", user)] == 7.0
    assert samples[("headwater_task_metric", _l(**src_task, metric="something_new"))] == 3.0
    stmgr = {**top, "container": str(src.container)}
    assert samples[("headwater_stmgr_bytes_out_total", _l(**stmgr))] == 4096.0
    assert samples[("headwater_stmgr_buffer_bytes", _l(**stmgr))] == 12.0
    assert samples[("headwater_stmgr_throttled_seconds_total", _l(**stmgr))] == 2.5
    assert (
        samples[
            (
                "headwater_stmgr_log_committed_offset",
                _l(**stmgr, log="/var/log/ingest", partition="0"),
            )
        ]
        == 99.0
    )
    for c in ("0", "1"):
        assert samples[("headwater_container_online", _l(**top, container=c))] == 1.0
        assert samples[("headwater_container_heartbeat_age_seconds", _l(**top, container=c))] == 2.5
    assert samples[("headwater_topology_state", _l(**top, state="RUNNING"))] == 1.0
    assert samples[("headwater_topology_state", _l(**top, state="PAUSED"))] == 0.0
    assert samples[("headwater_topology_health", _l(**top, health="ok"))] == 1.0
    assert samples[("headwater_topology_health", _l(**top, health="failed"))] == 0.0
    assert samples[("headwater_topology_revision", _l(**top))] == 1.0
    assert samples[("headwater_topology_recoveries_total", _l(**top))] == 0.0
    assert samples[("headwater_topology_uptime_seconds", _l(**top))] == 2.5
    assert types["headwater_component_emitted"] == "counter"
    assert types["headwater_task_execute_latency_seconds"] == "gauge"
    assert types["headwater_stmgr_bytes_out"] == "counter"
    # at-least-once: no checkpoints to show
    assert not any(name.startswith("headwater_checkpoint") for name, _ in samples)


def test_an_exactly_once_domain_shows_its_newest_complete_checkpoint(tmp_path: Path) -> None:
    clock = ManualClock()
    tm = _registered(tmp_path, clock, Reliability.EXACTLY_ONCE)
    clock.advance(tm.checkpoints.interval_s)
    tm.step()
    rec = tm.checkpoints.in_flight
    assert rec is not None
    clock.advance(0.25)
    for task in (1, 2):
        tm.checkpoints.ack(
            pb.CheckpointAck(task_id=task, checkpoint_id=rec.id, epoch=tm.epoch, size_bytes=100)
        )
    clock.advance(tm.checkpoints.interval_s)
    tm.step()  # the next one starts, and stays in flight
    assert tm.checkpoints.in_flight is not None

    samples, types = scrape(FamilyCollector(lambda f: add_topologies(f, [tm], "gw-1")))
    top = _l(topology="t", domain="gw-1")
    assert samples[("headwater_checkpoint_latest_id", top)] == rec.id
    assert samples[("headwater_checkpoint_duration_seconds", top)] == 0.25
    assert samples[("headwater_checkpoint_size_bytes", top)] == 200.0
    assert samples[("headwater_checkpoints_started_total", top)] == rec.id + 1
    assert samples[("headwater_checkpoint_in_progress", top)] == 1.0
    assert samples[("headwater_checkpoint_interval_seconds", top)] == tm.checkpoints.interval_s
    assert types["headwater_checkpoints_started"] == "counter"
    # what an agent reports of it to the master, and back
    figures = CheckpointFigures.of(tm)
    assert figures is not None
    assert CheckpointFigures.parse(figures.metrics("t")) == {"t": figures}
    assert figures.metrics("t")["checkpoint:t:latest"] == float(rec.id)


def test_a_family_keeps_the_label_names_of_its_first_sample() -> None:
    families = Families()
    families.gauge("x", "doc", {"node": "a"}, 1.0)
    with pytest.raises(ValueError, match=r"headwater_x has labels \('node',\)"):
        families.gauge("x", "doc", {"topology": "t"}, 1.0)


def test_label_values_are_escaped_by_the_library() -> None:
    def fill(f: Families) -> None:
        f.gauge("x", "doc", {"node": 'a"b\\c\nd'}, 1.0)

    text = Exposition(FamilyCollector(fill)).render().decode()
    assert 'headwater_x{node="a\\"b\\\\c\\nd"} 1.0' in text
    samples, _ = scrape(FamilyCollector(fill))
    assert samples == {("headwater_x", _l(node='a"b\\c\nd')): 1.0}


def test_busy_time_received_and_hot_keys_reach_the_view_and_the_families(tmp_path: Path) -> None:
    clock = ManualClock()
    tm = _registered(tmp_path, clock, Reliability.AT_LEAST_ONCE)
    sink = next(i for i in tm.plan.instances if i.component == "sink")
    scope = f"task:{sink.task_id}"
    hot = [(scope, f"hot_key:k{i}", share) for i, share in enumerate([0.3, 0.2, 0.1, 0.15, 0.05])]
    _beat(tm, sink.container, [(scope, "busy_ns", 2.5e9), (scope, "received", 40.0), *hot])
    _beat(tm, sink.container, [(scope, "busy_ns", 3e9), (scope, "received", 50.0), *hot[:2]])
    view = tm.metrics_view()
    task = view["tasks"][str(sink.task_id)]
    assert (task["busy_ns"], task["received"]) == (3e9, 50.0)
    # a heartbeat's hot keys replace the last ones: those gone from the top go
    assert {k: v for k, v in task.items() if k.startswith("hot_key:")} == {
        "hot_key:k0": 0.3,
        "hot_key:k1": 0.2,
    }
    assert (view["components"]["sink"]["busy_ns"], view["components"]["sink"]["received"]) == (
        3e9,
        50.0,
    )
    # at most five per task in the families, the largest shares
    for i in range(7):
        tm.metrics[scope][f"hot_key:x{i}"] = 0.01 * (i + 1)
    samples, types = scrape(FamilyCollector(lambda f: add_topologies(f, [tm], "cloud")))
    labels = {
        "topology": "t",
        "domain": "cloud",
        "component": "sink",
        "task": str(sink.task_id),
        "container": str(sink.container),
    }
    assert samples[("headwater_task_busy_seconds_total", _l(**labels))] == 3.0
    assert samples[("headwater_task_received_total", _l(**labels))] == 50.0
    top = _l(topology="t", domain="cloud", component="sink")
    assert samples[("headwater_component_busy_seconds_total", top)] == 3.0
    assert samples[("headwater_component_received_total", top)] == 50.0
    shown = {
        dict(lbl)["key"]: v
        for (name, lbl), v in samples.items()
        if name == "headwater_task_hot_key_share"
    }
    assert shown == {"k0": 0.3, "k1": 0.2, "x6": 0.07, "x5": 0.06, "x4": 0.05}
    assert types["headwater_task_busy_seconds"] == "counter"
    assert types["headwater_task_hot_key_share"] == "gauge"
    assert not any(dict(lbl).get("metric", "").startswith("hot_key") for _, lbl in samples)
