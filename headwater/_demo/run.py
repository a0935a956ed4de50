"""``headwater demo``: the IoT path on one machine, every piece real.

A broker (Mosquitto when installed, an embedded amqtt broker otherwise),
simulated sensors on two sites publishing JSON readings with the odd
malformed one, and the exactly-once IoT example on the product's daemons:
``headwater master``, a ``headwater worker`` and one ``headwater agent`` per
site. Each agent ingests its site's topics into its durable log and runs
the edge half (parse with dead letters, dedup, smoothing, anomalies) as its
own checkpoint domain; the worker runs the cloud half (event-time windows,
per-site aggregates, sinks) on what the agents' uplinks deliver.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from headwater.common._package import build_package
from headwater.common._ports import free_ports
from headwater.common.connectors import read_key_value_sink
from headwater.common.runtime._procs import spawn, terminate

from .hints import (
    BROKEN_EVERY,
    BROKEN_PAYLOAD,
    BROKEN_TOPIC,
    DeadLetters,
    broken_sensor,
    console_token,
    where_to_look,
)
from .loop import SparkLoop
from .sensors import reading

# the IoT example, shipped in the package (headwater/examples links to examples/)
PIPELINE = Path(__file__).resolve().parents[1] / "examples" / "iot" / "pipeline.py"


def start_broker(workdir: Path) -> tuple[int, Any, str]:
    """Mosquitto if installed (unless HEADWATER_DEMO_BROKER=embedded), else amqtt."""
    [port] = free_ports(1)
    mosquitto = shutil.which("mosquitto") or (
        "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None
    )
    if mosquitto and os.environ.get("HEADWATER_DEMO_BROKER") != "embedded":
        conf = workdir / "mosquitto.conf"
        conf.write_text(
            f"listener {port} 127.0.0.1\nallow_anonymous true\n"
            "persistence false\nmax_queued_messages 0\n"
        )
        proc = spawn(["-c", str(conf)], log_path=str(workdir / "broker.log"), executable=mosquitto)
        kind = "Mosquitto"
    else:
        proc = spawn(
            ["-m", "headwater._demo.broker", "--port", str(port)],
            log_path=str(workdir / "broker.log"),
        )
        kind = "embedded broker (amqtt)"
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return port, proc, kind
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the MQTT broker did not start; see {workdir}/broker.log"
                ) from None
            time.sleep(0.05)


STEP_MS = 5_000  # event time between two readings of a sensor
SPEEDUP = 10  # the demo's clock runs 10 times as fast as the wall clock, until it catches up
HEAD_START_H = 2  # it starts 2 to 3 hours back, at the top of an hour
WINDOW_MS = 10_000  # the pipeline's windows (iot_steps.WINDOW_MS)


def utc(ms: int, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return time.strftime(fmt, time.gmtime(ms / 1000))


# the demo runs the example it ships, as whoever started it, and its nodes write into its
# own (private) folder: its topology's code runs as the demo's user (docs/security.md)
LOCAL_CODE = ("--isolation", "none")


class DemoClock:
    """The sensors' event time: from ``start_ms``, ``speedup`` times the wall clock from
    ``wall0`` (epoch s) until it reaches the real time, then the real time (a reading's
    ``ts`` is never ahead of when it is sent, so the pipeline never takes it for a clock
    gone wrong)."""

    def __init__(self, wall0: float, speedup: int = SPEEDUP, head_start_h: int = HEAD_START_H):
        self.wall0, self.speedup = wall0, speedup
        self.start_ms = (int(wall0) // 3600 - head_start_h) * 3_600_000

    def ts(self, seq: int) -> int:
        return self.start_ms + seq * STEP_MS

    def due(self, seq: int) -> float:
        """When (epoch s) reading ``seq`` of every sensor is sent."""
        ts = self.ts(seq)
        return max(self.wall0 + (ts - self.start_ms) / 1000 / self.speedup, ts / 1000)

    def describe(self) -> str:
        behind_s = self.wall0 - self.start_ms / 1000
        catch_up_min = behind_s / (self.speedup - 1) / 60
        per_s = self.speedup * 1000 / STEP_MS
        return (
            f"  clock: the sensors' event time starts at {utc(self.start_ms)} UTC "
            f"({behind_s / 3600:.1f} h ago) and runs {self.speedup}x the wall clock (a reading "
            f"per sensor every {STEP_MS // 1000} s of event time, {per_s:g} a second) until it "
            f"reaches the real time, in about {catch_up_min:.0f} min; then it keeps real time"
        )


def publish_forever(port: int, stop: threading.Event, clock: DemoClock) -> None:
    """Six sensors on two sites, paced by ``clock``, and a broken one."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="headwater-demo-sensors")
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        for seq in itertools.count():
            if stop.wait(max(0.0, clock.due(seq) - time.time())):
                return
            for s, k in itertools.product(range(len(Demo.SITES)), range(PER_SITE)):
                topic, body = reading(s, k, seq, clock.ts(seq))
                client.publish(topic, json.dumps(body), qos=1)
            if seq % BROKEN_EVERY == 7:  # a sensor with a broken firmware
                client.publish(BROKEN_TOPIC, BROKEN_PAYLOAD, qos=1)
    finally:
        client.disconnect()
        client.loop_stop()


PER_SITE = 3
WINDOW_HEADER = (
    f"  {'site':<7}{'window (UTC)':<31}{'sensors':>7}{'readings':>9}{'mean':>8}{'min':>8}"
    f"{'max':>8}{'anomalies':>10}"
)


def closed_windows(rows: Iterable[list[Any]], shown: set[str], per_site: int) -> list[list[Any]]:
    """The site windows (``site_windows`` rows) not in ``shown`` that are closed: every
    sensor of the site merged in, or 3 windows older than the site's newest (a sensor
    that fell silent), oldest first."""
    rows = list(rows)
    newest: dict[str, int] = {}
    for row in rows:
        newest[row[1]] = max(newest.get(row[1], row[2]), row[2])
    done = [
        row
        for row in rows
        if row[0] not in shown and (row[3] >= per_site or row[2] <= newest[row[1]] - 3 * WINDOW_MS)
    ]
    return sorted(done, key=lambda row: (row[2], row[1]))


def window_line(row: list[Any]) -> str:
    """A site window as a row of ``WINDOW_HEADER``'s table."""
    _key, site, w, sensors, count, mean, lo, hi, anomalies = row[:9]
    when = f"{utc(w)}-{utc(w + WINDOW_MS, '%H:%M:%S')}Z"
    return (
        f"  {site:<7}{when:<31}{sensors:>7}{count:>9}{mean:>8.2f}{lo:>8.2f}{hi:>8.2f}"
        f"{anomalies:>10}"
    )


def get_json(url: str, token: str = "") -> Any:
    """GET ``url``'s JSON, sending ``token`` (a master's REST API needs one) if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
        return json.loads(r.read())


class Demo:
    """Master, a worker, two agents (one per site), a broker and sensors, as real processes."""

    SITES = ("site0", "site1")

    def __init__(self, workdir: Path | None = None, speedup: int = SPEEDUP) -> None:
        self.work = workdir or Path(tempfile.mkdtemp(prefix="hw-demo-"))
        self.speedup = speedup
        self.out = self.work / "out"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stop_sensors = threading.Event()
        self.sensors: threading.Thread | None = None
        self.http = self.grpc = ""
        self.token = ""  # the admin token the master made: the demo submits with it
        self.loop: SparkLoop | None = None  # rollups, training and rollout, once it runs
        self.clock: DemoClock | None = None
        self.shown: set[str] = set()  # the site windows printed
        self.dead_letters = DeadLetters(self.out / "landing")

    def _daemon(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.procs.append(
            spawn(["-m", "headwater", *args], env=env, log_path=str(self.work / f"{name}.log"))
        )

    def _join_token(self, role: str, info: dict[str, Any]) -> str:
        """Throwaway credentials: each node of the demo enrols with a join token of its own."""
        from headwater.cloud.master import join_token_on_host

        return join_token_on_host(self.work / "master", role, info, ttl_s=600)

    def start(self) -> None:
        port, broker, kind = start_broker(self.work)
        self.procs.append(broker)
        print(
            f"  MQTT: {kind} on 127.0.0.1:{port}; 6 sensors on 2 sites publish to "
            "sensors/<site>/<sensor>",
            flush=True,
        )
        ready = self.work / "master.json"
        self._daemon(
            "master",
            "master",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--http-port",
            "0",
            "--state-dir",
            str(self.work / "master"),
            "--ready-file",
            str(ready),
            "--no-advertise",
            "--join-port",
            "0",
        )
        info = wait_until(
            lambda: ready.exists() and json.loads(ready.read_text()), "starting the master"
        )
        self.grpc, self.http = info["grpc"], info["http"]
        self.token = (self.work / "master" / "admin.token").read_text().strip()
        self._daemon(
            "worker-1",
            "worker",
            "--master",
            self.grpc,
            "--id",
            "worker-1",
            "--workdir",
            str(self.work / "worker-1"),
            "--join",
            self._join_token("worker", info),
            *LOCAL_CODE,
            env={"IOT_OUT": str(self.out)},
        )
        for site in self.SITES:
            self._daemon(
                f"gw-{site}",
                "agent",
                "--master",
                self.grpc,
                "--id",
                f"gw-{site}",
                "--label",
                f"site={site}",
                "--mqtt",
                f"127.0.0.1:{port}",
                "--topic",
                f"sensors/{site}/#",
                "--workdir",
                str(self.work / f"gw-{site}"),
                "--join",
                self._join_token("agent", info),
                *LOCAL_CODE,
            )
        wait_until(
            lambda: len([n for n in self.nodes() if n["online"]]) == 3,
            "the worker and both agents attaching",
        )
        data, entry = build_package(str(PIPELINE))
        req = urllib.request.Request(
            f"{self.http}/api/v1/topologies?{urlencode({'entry': entry, 'containers': 1})}",
            data=data,
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            json.loads(r.read())
        self.clock = DemoClock(time.time(), self.speedup)  # from the first reading on
        self.sensors = threading.Thread(
            target=publish_forever, args=(port, self.stop_sensors, self.clock), daemon=True
        )
        self.sensors.start()
        print("running 'iot' on a master, a cloud worker and 2 edge agents", flush=True)
        print(self.clock.describe(), flush=True)
        print(
            "  edge (each agent, its own checkpoint domain): readings -> parse -> dedup -> "
            "smooth -> anomaly, uplinked from a durable outbox",
            flush=True,
        )
        print("  cloud (the worker): 10 s windows per sensor -> per site -> sinks", flush=True)
        print(broken_sensor(), flush=True)
        admin = self.work / "master" / "admin.token"
        for line in where_to_look(self.http, console_token(self.http, self.token), admin):
            print(line, flush=True)
        print(
            f"  outputs (kept after the demo): {self.out / 'site_windows'} (per-site "
            f"windows), {self.out / 'landing'} (readings, sensor_windows, dead_letters: Parquet)",
            flush=True,
        )
        print(
            f"  read them: headwater read {self.out / 'site_windows'}, "
            f"headwater read --follow {self.out / 'landing' / 'readings'}",
            flush=True,
        )
        print(f"  logs: {self.work}", flush=True)
        per_s = len(self.SITES) * PER_SITE * self.speedup * 1000 / STEP_MS
        self.loop = SparkLoop(self.work, self.out, self.http, admin, _say, per_s)
        self.loop.start()
        print("  stop with Ctrl-C", flush=True)

    def tick(self) -> None:
        if self.loop is not None:
            self.loop.step()

    def nodes(self) -> list[dict[str, Any]]:
        return get_json(f"{self.http}/api/v1/nodes", self.token)  # type: ignore[no-any-return]

    def report(self) -> None:
        new = closed_windows(
            read_key_value_sink(self.out / "site_windows").values(), self.shown, PER_SITE
        )
        if new:
            print(WINDOW_HEADER, flush=True)
        for row in new:
            print(window_line(row), flush=True)
            self.shown.add(row[0])
        agents = [
            f"{n['id']} {'online' if n['online'] else 'OFFLINE'} backlog "
            f"{n['backlog_batches']} batches"
            for n in self.nodes()
            if n["kind"] == "agent"
        ]
        cp = get_json(f"{self.http}/api/v1/topologies/iot/checkpoints", self.token)
        self.dead_letters.update()
        print(
            f"  dead letters so far: {self.dead_letters.line()} | {' | '.join(agents)} | "
            f"cloud checkpoints: latest complete {cp['latest_complete']}",
            flush=True,
        )
        if self.loop is not None:
            self.loop.report()

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.stop()
        self.stop_sensors.set()
        if self.sensors is not None:
            self.sensors.join(5)
        terminate(list(reversed(self.procs)), 15.0)


def _say(line: str) -> None:
    print(line, flush=True)


def wait_until(
    cond: Callable[[], Any], what: str, timeout: float = 60.0, interval: float = 0.1
) -> Any:
    """``cond()``'s first true value (an OSError counts as not yet), asked every ``interval``
    seconds; RuntimeError on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = cond()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(interval)
    raise RuntimeError(f"{what}: not within {timeout:.0f}s")
