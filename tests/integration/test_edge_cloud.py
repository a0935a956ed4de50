"""Edge to cloud: the IoT example across a master, a worker and two agents with a real broker.

Edge components run in the agents' processes and cloud components in the
worker's; each agent's subgraph is its own checkpoint domain, joined to the
cloud by its durable outbox, an outbound uplink and sequence numbers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import psutil
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from headwater._demo.linkproxy import LinkProxy
from headwater.common.connectors import manifests, read_landing
from headwater.common.plan import cloud_part, edge_part, load_topology, task_ids

from .._iot import iot_io as landing
from .._iot import iot_steps as steps
from .._ports import free_port
from ._daemons import Daemons
from ._support import EXAMPLES, landed_dead_letters, wait_for
from .test_iot import MALFORMED, SENSORS, _expected, _site_rows

pytestmark = pytest.mark.cluster
PIPELINE = EXAMPLES / "iot" / "pipeline.py"
SITES = ("site0", "site1")


class Sensors:
    """A publisher of the example's readings (QoS 1), site by site."""

    def __init__(self, host: str, port: int) -> None:
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="sensors")
        self.client.connect(host, port)
        self.client.loop_start()

    def publish(self, messages: list[tuple[str, bytes]]) -> None:
        for topic, payload in messages:
            self.client.publish(topic, payload, qos=1).wait_for_publish(10)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def sensors(mosquitto: tuple[str, int]) -> Iterator[Sensors]:
    s = Sensors(*mosquitto)
    yield s
    s.close()


def _node(daemons: Daemons, name: str) -> dict[str, Any]:
    return next(n for n in daemons.api("/api/v1/nodes") if n["id"] == name)


def _instances(proc: psutil.Process) -> dict[int, int]:
    """Instance processes under a daemon: task id -> PID (a fork of the container's fork
    server is named ``hw-task-N``; one it spawned says ``--task N``)."""
    out: dict[int, int] = {}
    for child in proc.children(recursive=True):
        try:
            name, cmd = child.name(), child.cmdline()
        except psutil.NoSuchProcess:
            continue
        if name.startswith("hw-task-"):
            out[int(name.removeprefix("hw-task-"))] = child.pid
        elif "headwater.common.runtime.instance" in cmd:
            out[int(cmd[cmd.index("--task") + 1])] = child.pid
    return out


def _agent_args(mosquitto: tuple[str, int], site: str, master: str, *more: str) -> list[str]:
    host, port = mosquitto
    return [
        "--master",
        master,
        "--label",
        f"site={site}",
        "--mqtt",
        f"{host}:{port}",
        "--topic",
        f"sensors/{site}/#",
        *more,
    ]


def _start_cluster(
    daemons: Daemons,
    mosquitto: tuple[str, int],
    tmp_path: Path,
    agent_args: dict[str, list[str]] | None = None,
    master: bool = True,
) -> tuple[psutil.Process, dict[str, psutil.Process], Path]:
    out = tmp_path / "out"
    if master:
        daemons.start_master()
    worker = daemons.start_worker("w1", env={"IOT_OUT": str(out)})
    args = agent_args or {s: _agent_args(mosquitto, s, daemons.grpc) for s in SITES}
    agents = {site: daemons.start_agent(f"gw-{site}", *args[site]) for site in SITES}
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 3,
        30,
        "the worker and both agents online",
    )
    daemons.cli("submit", str(PIPELINE))
    wait_for(
        lambda: all(
            _node(daemons, f"gw-{s}")["metrics"].get("mqtt_connected") == 1.0
            and _node(daemons, f"gw-{s}")["uplinks"].get("iot", {}).get("connected")
            for s in SITES
        ),
        60,
        "both agents subscribed and their uplinks open",
    )
    return worker, agents, out


STEP_MS = 45 * 60_000


def _sensor_window(acc: list[Any] | None, row: list[Any]) -> tuple[list[Any], list[list[Any]]]:
    """The expected per-sensor windows, written out here: a sensor's 10 s window closes on
    its first reading of another window (then emitted ``[site, sensor, window, count, sum,
    min, max, anomalies]``); its newest window stays open."""
    site, sensor, _seq, ts, value, _smoothed, flagged = row[:7]
    w = ts - ts % steps.WINDOW_MS
    out: list[list[Any]] = []
    if acc is not None and acc[0] != w:
        out.append([site, sensor, *acc])
        acc = None
    if acc is None:
        acc = [w, 0, 0.0, value, value, 0]
    return [
        w,
        acc[1] + 1,
        acc[2] + value,
        min(acc[3], value),
        max(acc[4], value),
        acc[5] + int(flagged),
    ], out


def _check_landing(root: Path, readings: list[dict[str, Any]], dates: int | None = 3) -> None:
    """The landing zone holds every reading once, with the flag the pipeline gave it, and
    every closed window once; manifests are contiguous and count exactly the files there."""
    wait_for(
        lambda: sum(m["rows"] for m in manifests(root, "readings")) >= len(readings),
        60,
        "every reading landed",
    )
    want_rows, want_windows = [], []
    state: dict[str, list[Any]] = defaultdict(lambda: [None, None, None])
    for r in readings:  # offline, with the pipeline's own step functions
        ewma, stats, window = state[r["sensor"]]
        row = [r["site"], r["sensor"], r["seq"], r["ts"], float(r["value"])]
        ewma, [row] = steps.smooth(ewma, row)
        stats, [row] = steps.anomaly(stats, row)
        window, closed = _sensor_window(window, row)
        state[r["sensor"]] = [ewma, stats, window]
        day = time.strftime("%Y-%m-%d", time.gmtime(r["ts"] // 1000))
        want_rows.append({**dict(zip(landing.READING, row, strict=True)), "date": day})
        for c in closed:
            wday = time.strftime("%Y-%m-%d", time.gmtime(c[2] // 1000))
            want_windows.append({**dict(zip(landing.WINDOW, c, strict=True)), "date": wday})
    wait_for(
        lambda: sum(m["rows"] for m in manifests(root, "sensor_windows")) >= len(want_windows),
        60,
        "every closed window landed",
    )

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["sensor"], r.get("seq", r.get("window")))

    got = sorted(read_landing(root, "readings"), key=key)
    assert len({key(r) for r in got}) == len(got) == len(readings)  # every (sensor, seq) once
    assert got == sorted(want_rows, key=key)
    if dates is not None:
        assert len({r["date"] for r in got}) == dates
    assert sorted(read_landing(root, "sensor_windows"), key=key) == sorted(want_windows, key=key)
    for dataset in ("readings", "sensor_windows"):
        ms = manifests(root, dataset)
        assert [m["seq"] for m in ms] == list(range(1, len(ms) + 1))
        assert len({(m["checkpoint"], m["task"]) for m in ms}) == len(ms)
        listed = sorted(f["path"] for m in ms for f in m["files"])
        on_disk = sorted(
            str(p.relative_to(root / dataset)) for p in (root / dataset).rglob("part-*.parquet")
        )
        assert listed == on_disk
        rows = len(read_landing(root, dataset))
        assert sum(m["rows"] for m in ms) == sum(f["rows"] for m in ms for f in m["files"]) == rows


def test_iot_example_runs_across_worker_and_two_agents(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    status = {s: free_port() for s in SITES}
    daemons.start_master()
    args = {
        s: _agent_args(mosquitto, s, daemons.grpc, "--status-port", str(status[s])) for s in SITES
    }
    worker, agents, out = _start_cluster(daemons, mosquitto, tmp_path, args, master=False)

    readings = list(SENSORS["readings"](2, 3, 40, step_ms=STEP_MS))  # 29 h 15 min: 3 dates
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    messages[50:50] = [("sensors/site1/bad", m) for m, _ in MALFORMED]
    sensors.publish(messages)

    expected = _expected([r for _, r in readings])
    wait_for(lambda: len(landed_dead_letters(out)) == len(MALFORMED), 90, "the dead letters")
    wait_for(
        lambda: _site_rows(out / "site_windows") == expected,
        90,
        "every closed window of both sites at the cloud sink",
    )
    assert len(expected) == 2 * 39  # 2 sites x 39 closed windows (a reading each)
    dead = landed_dead_letters(out)  # [component, reason, traceback, record]
    reasons = sorted(d[1] for d in dead)
    for (_payload, reason), got in zip(sorted(MALFORMED, key=lambda m: m[1]), reasons, strict=True):
        assert reason in got
    assert all(d[0] == "parse" and d[3][0] == "sensors/site1/bad" for d in dead)

    _check_landing(out / "landing", [r for _, r in readings])

    # where everything ran, by PID: edge components under each agent, cloud ones under the worker
    full = load_topology(PIPELINE)
    edge_ids = task_ids(edge_part(full, {"site": "site0"}))
    edge_components = {t: c for c, ts in edge_ids.items() for t in ts}
    for site, agent in agents.items():
        here = _instances(agent)
        assert sorted(edge_components[t] for t in here) == sorted(
            [
                "readings",
                "parse",
                "dedup",
                "smooth",
                "anomaly",
                "__outbox__parse",
                "__outbox__dedup",
                "__outbox__smooth",
                "__outbox__anomaly",
            ]
        ), site
    cloud_ids = task_ids(cloud_part(full))
    cloud_components = {t: c for c, ts in cloud_ids.items() for t in ts}
    on_worker = _instances(worker)
    assert sorted(cloud_components[t] for t in on_worker) == sorted(
        [
            *["parse", "dedup", "smooth", "anomaly", "windows", "site", "site_windows"],
            *["land_readings", "land_windows", "dead_letters"],
        ]
    )  # the receivers stand in for the edge components (their dead letters too) by name
    master_pids = {
        int(m["pid"]) for m in daemons.api("/api/v1/topologies/iot/metrics")["tasks"].values()
    }
    assert master_pids == set(on_worker.values())
    for agent in agents.values():
        assert not master_pids & set(_instances(agent).values())
    # the outboxes drain once the cloud has checkpointed everything
    wait_for(
        lambda: all(_node(daemons, f"gw-{s}")["backlog_batches"] == 0 for s in SITES),
        30,
        "the outboxes empty",
    )

    # retention: each ingest log is trimmed to what the edge checkpoints have passed
    wait_for(
        lambda: all(
            (m := _node(daemons, f"gw-{s}")["metrics"]).get("ingest_trimmed") == m["mqtt_appended"]
            for s in SITES
        ),
        30,
        "both ingest logs trimmed",
    )

    # deactivate and activate through the master reach the agents' edge subgraphs too
    daemons.cli("deactivate", "iot")
    wait_for(
        lambda: all(_status(status[s]).get("topologies") == {"iot": "PAUSED"} for s in SITES),
        20,
        "both edge subgraphs paused",
    )
    assert "state PAUSED" in daemons.cli("status", "iot")
    daemons.cli("activate", "iot")
    wait_for(
        lambda: all(_status(status[s]).get("topologies") == {"iot": "RUNNING"} for s in SITES),
        20,
        "both edge subgraphs running again",
    )
    log = (tmp_path / "gw-site0.log").read_text()
    assert re.search(r"^ts=\S+Z level=INFO role=agent pid=\d+ logger=headwater\.", log, re.M)


class SteadySensors(threading.Thread):
    """Publishes ``messages`` at ``rate`` per second (QoS 1), counting what went out per site.
    ``finish`` ends it early at the end of a round (``round_size`` messages that send each
    site as many: one per site in ``SITES``' order by default, every sensor's next reading
    for ``headwater._demo.sensors.readings``), so that a test publishes while something
    happens and not longer."""

    def __init__(
        self,
        sensors: Sensors,
        messages: list[tuple[str, bytes]],
        rate: float,
        round_size: int = len(SITES),
    ) -> None:
        super().__init__(name="sensors", daemon=True)
        self.sensors, self.messages, self.rate = sensors, messages, rate
        self.round_size = round_size
        self.sent: dict[str, int] = {s: 0 for s in SITES}
        self.stop = threading.Event()
        self.finishing = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        for i, (topic, payload) in enumerate(self.messages):
            if i % self.round_size == 0 and self.finishing.is_set():
                return
            delay = start + i / self.rate - time.monotonic()
            if self.stop.wait(max(0.0, delay)):
                return
            self.sensors.publish([(topic, payload)])
            self.sent[topic.split("/")[1]] += 1

    def finish(self, timeout: float = 30.0) -> int:
        """Stop after this round (or at the end of ``messages``, if that came first) and
        return how many went to each site: the same number to every one."""
        self.finishing.set()
        self.join(timeout)
        assert not self.is_alive(), "the publisher did not stop"
        counts = set(self.sent.values())
        assert len(counts) == 1, f"sites sent different counts: {self.sent}"
        return counts.pop()


def _steady(read: Callable[[], Any], for_s: float, timeout: float = 30.0) -> Any:
    """A value that has not changed for ``for_s`` seconds."""
    seen: dict[str, Any] = {"value": read(), "since": time.monotonic()}

    def settled() -> bool:
        value = read()
        if value != seen["value"]:
            seen.update(value=value, since=time.monotonic())
        return bool(time.monotonic() - seen["since"] >= for_s)

    wait_for(settled, timeout, f"a value unchanged for {for_s}s", interval=0.2)
    return seen["value"]


def _status(port: int) -> dict[str, Any]:
    """The agent's own view (``--status-port``); empty while it is not serving."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]
    except OSError:
        return {"metrics": {}, "backlog_batches": -1, "backlog_bytes": -1}


def test_cut_link_delays_but_loses_and_duplicates_nothing(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    """60 s without the cloud: site0's outbox grows; site1's tiny budget fills, MQTT
    acknowledgement stops and the broker holds the rest. Afterwards: every reading once.
    Site1's agent runs the small footprint (``--footprint small``), site0's the normal one."""
    daemons.start_master()
    proxies = {s: LinkProxy(daemons.grpc) for s in SITES}
    status = {s: free_port() for s in SITES}
    publisher: SteadySensors | None = None
    try:
        args = {
            "site0": _agent_args(
                mosquitto,
                "site0",
                proxies["site0"].address,
                "--status-port",
                str(status["site0"]),
                "--ingress-proxy",
                proxies["site0"].address,
            ),
            "site1": _agent_args(
                mosquitto,
                "site1",
                proxies["site1"].address,
                "--status-port",
                str(status["site1"]),
                "--outbox-budget",
                "3000",
                "--ingress-proxy",
                proxies["site1"].address,
                "--footprint",
                "small",
            ),
        }
        _worker, _agents, out = _start_cluster(daemons, mosquitto, tmp_path, args, master=False)
        readings = list(SENSORS["readings"](2, 3, 130))
        publisher = SteadySensors(sensors, [(t, json.dumps(r).encode()) for t, r in readings], 10)
        publisher.start()
        wait_for(lambda: publisher.sent["site0"] >= 40, 30, "the first readings out")
        for p in proxies.values():
            p.cut()
        cut_at = time.monotonic()
        wait_for(
            lambda: (
                not _node(daemons, "gw-site0")["online"]
                and not _node(daemons, "gw-site1")["online"]
            ),
            20,
            "both agents offline at the master",
        )

        # site0: the outbox grows while the link is down, and the agent shows it
        first = wait_for(
            lambda: (b := _status(status["site0"])["backlog_batches"]) > 0 and b,
            30,
            "a backlog at site0",
        )
        wait_for(
            lambda: _status(status["site0"])["backlog_batches"] > first + 3,
            30,
            "site0's backlog growing",
        )
        # site1: the outbox is full, ingestion paused, the broker holds the rest
        wait_for(
            lambda: _status(status["site1"])["metrics"]["mqtt_paused"] == 1.0,
            40,
            "site1's ingestion paused by its full outbox",
        )
        held_from = _steady(lambda: _status(status["site1"])["metrics"]["mqtt_appended"], 2.0)
        wait_for(
            lambda: publisher.sent["site1"] > held_from + 20,
            40,
            "readings published past what site1 took",
        )
        assert _status(status["site1"])["metrics"]["mqtt_appended"] == held_from
        assert _status(status["site1"])["backlog_bytes"] >= 3000
        assert not (out / "site_windows").exists() or True  # the cloud keeps what it had

        # the cut lasts while the sensors publish the rest: 780 readings at 10/s, about 70 s
        wait_for(lambda: not publisher.is_alive(), 120, "every reading published while cut")
        assert time.monotonic() - cut_at >= 60
        for p in proxies.values():
            p.restore()
        assert publisher.sent == {"site0": 390, "site1": 390}
        expected = _expected([r for _, r in readings])
        wait_for(
            lambda: _site_rows(out / "site_windows") == expected,
            120,
            "every closed window, each reading counted once",
        )
        assert len(expected) == 2 * 12
        wait_for(
            lambda: all(_node(daemons, f"gw-{s}")["backlog_batches"] == 0 for s in SITES),
            60,
            "both outboxes confirmed and empty",
        )
        assert _status(status["site1"])["metrics"]["mqtt_appended"] >= 390
        assert landed_dead_letters(out) == []
    finally:
        if publisher is not None:
            publisher.stop.set()
            publisher.join(30)
        for p in proxies.values():
            p.close()


def test_agent_killed_while_offline_loses_and_duplicates_nothing(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    daemons.start_master()
    proxy = LinkProxy(daemons.grpc)
    port = free_port()
    try:
        args = {
            "site0": _agent_args(
                mosquitto,
                "site0",
                proxy.address,
                "--status-port",
                str(port),
                "--ingress-proxy",
                proxy.address,
            ),
            "site1": _agent_args(mosquitto, "site1", daemons.grpc),
        }
        _worker, agents, out = _start_cluster(daemons, mosquitto, tmp_path, args, master=False)
        readings = list(SENSORS["readings"](2, 3, 40))
        messages = [(t, json.dumps(r).encode()) for t, r in readings]
        half = len(messages) // 2
        sensors.publish(messages[:60])
        proxy.cut()
        sensors.publish(messages[60:half])
        wait_for(
            lambda: (
                _status(port)["backlog_batches"] > 0
                and _status(port)["metrics"]["mqtt_appended"] >= half // 2
            ),
            30,
            "site0's readings acknowledged and in its outbox",
        )
        agents["site0"].kill()  # SIGKILL: its containers and instances die with it
        agents["site0"].wait(10)
        sensors.publish(messages[half:])  # the broker keeps site0's for its session
        daemons.start_agent("gw-site0", *args["site0"])
        wait_for(
            lambda: _status(port)["metrics"].get("mqtt_connected") == 1.0,
            30,
            "the restarted agent subscribed again",
        )
        proxy.restore()
        expected = _expected([r for _, r in readings])
        wait_for(
            lambda: _site_rows(out / "site_windows") == expected,
            90,
            "every closed window, each reading counted once",
        )
        wait_for(
            lambda: _node(daemons, "gw-site0")["backlog_batches"] == 0,
            60,
            "site0's outbox confirmed and empty",
        )
    finally:
        proxy.close()


def test_agents_find_the_master_by_zeroconf_and_by_address(
    daemons: Daemons, netns_pair: tuple[str, str], tmp_path: Path
) -> None:
    """Across a network the test makes (two namespaces joined by a veth pair, multicast on):
    the master, its worker and the broker in one; gw-site0 in the other finds the master by
    zeroconf, gw-site1 is given its address. The example then runs across all of them."""
    master_ns, agent_ns = netns_pair
    port = free_port()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(
        f"listener {port} 10.250.0.1\nallow_anonymous true\npersistence false\n"
        "max_queued_messages 0\n"
    )
    broker = subprocess.Popen(
        ["ip", "netns", "exec", master_ns, "mosquitto", "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        out = tmp_path / "out"
        daemons.start_master(host="10.250.0.1", netns=master_ns)
        # its stream managers on the veth: gw-site0's uplink comes in from the other namespace
        daemons.start_worker("w1", env={"IOT_OUT": str(out)}, netns=master_ns, host="10.250.0.1")
        mqtt_at = f"10.250.0.1:{port}"
        daemons.start_agent(
            "gw-site0",
            "--label",
            "site=site0",
            "--mqtt",
            mqtt_at,
            "--topic",
            "sensors/site0/#",
            netns=agent_ns,
        )  # no --master
        daemons.start_agent(
            "gw-site1",
            "--master",
            daemons.grpc,
            "--label",
            "site=site1",
            "--mqtt",
            mqtt_at,
            "--topic",
            "sensors/site1/#",
            netns=master_ns,
        )
        wait_for(
            lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 3,
            60,
            "the worker and both agents online",
        )
        assert "found the master at 10.250.0.1:" in (tmp_path / "gw-site0.log").read_text()
        in_ns = ["ip", "netns", "exec", master_ns, sys.executable]
        subprocess.run(
            [
                *(*in_ns, "-m", "headwater", "submit", str(PIPELINE)),
                *("--master", daemons.http, "--token", daemons.token),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        wait_for(
            lambda: all(
                _node(daemons, f"gw-{s}")["metrics"].get("mqtt_connected") == 1.0
                and _node(daemons, f"gw-{s}")["uplinks"].get("iot", {}).get("connected")
                for s in SITES
            ),
            60,
            "both agents subscribed and their uplinks open",
        )
        subprocess.run(
            [
                *(*in_ns, "-m", "headwater", "sensors", "--broker", mqtt_at, "--count", "30"),
                *("--rate", "0", "--clock", "sim", "--state-dir", str(tmp_path / "sensors")),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        expected = _expected([r for _, r in SENSORS["readings"](2, 3, 30)])
        wait_for(
            lambda: _site_rows(out / "site_windows") == expected,
            90,
            "every closed window of both sites at the cloud sink",
        )
        assert len(expected) == 2 * 2
    finally:
        broker.terminate()
        broker.wait(10)
