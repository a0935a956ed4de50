"""`headwater sensors` against a real Mosquitto: what it says, and seq going on across runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from headwater._demo.sensors import readings
from tests._wait import wait_for


class Subscriber:
    """Every reading the broker delivers on ``sensors/#`` (QoS 1), in arrival order."""

    def __init__(self, host: str, port: int) -> None:
        self.got: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="test-subscriber")
        self.client.on_connect = lambda c, *_: c.subscribe("sensors/#", qos=1)
        self.client.on_subscribe = lambda *_: self._subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect(host, port)
        self.client.loop_start()
        assert self._subscribed.wait(10), "the subscription was not acknowledged"

    def _on_message(self, _c: Any, _u: Any, msg: mqtt.MQTTMessage) -> None:
        with self._lock:
            self.got.append({"topic": msg.topic, **json.loads(msg.payload)})

    def readings(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.got)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def subscriber(mosquitto: tuple[str, int]) -> Iterator[Subscriber]:
    sub = Subscriber(*mosquitto)
    try:
        yield sub
    finally:
        sub.close()


def _sensors(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", "sensors", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_a_second_run_goes_on_from_the_first_runs_seqs(
    mosquitto: tuple[str, int], subscriber: Subscriber, tmp_path: Path
) -> None:
    broker = "{}:{}".format(*mosquitto)
    state = tmp_path / "state"
    common = ("--broker", broker, "--per-site", "2", "--rate", "0", "--clock", "sim")
    first = _sensors(*common, "--count", "5", "--state-dir", str(state))
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == (
        f"publishing 4 sensors (site0, site1) to {broker} on sensors/<site>/<sensor>, QoS 1, "
        f"as fast as acknowledged, simulated clock, 1000 ms a step, 5 readings each; "
        f"seq from 0 (state: {state})"
    )
    assert lines[-1] == (
        f"published 20 readings (acknowledged by the broker); next seq 5, kept in {state}"
    )
    wait_for(lambda: len(subscriber.readings()) >= 20, 20, "the first run's 20 readings")
    second = _sensors(*common, "--count", "3", "--state-dir", str(state))
    assert second.returncode == 0, second.stderr
    assert "seq from 5 " in second.stdout.splitlines()[0]
    assert second.stdout.splitlines()[-1].startswith("published 12 readings")
    wait_for(lambda: len(subscriber.readings()) >= 32, 20, "the second run's 12 readings")
    got = subscriber.readings()
    assert len(got) == 32
    # exactly the simulated readings of seq 0-4, then 5-7: nothing repeated, nothing skipped
    want = [{"topic": t, **r} for t, r in readings(2, 2, 8)]
    key = lambda r: (r["sensor"], r["seq"])  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)
    assert [r["seq"] for r in got if r["sensor"] == "s1-1"] == list(range(8))
    assert json.loads((state / "site0.json").read_text()) == {"s0-0": 8, "s0-1": 8}

    # one site alone goes on where it stood; the other site's state stays as it was
    third = _sensors(*common, "--count", "2", "--state-dir", str(state), "--site", "site1")
    assert third.returncode == 0, third.stderr
    wait_for(lambda: len(subscriber.readings()) >= 36, 20, "the third run's 4 readings")
    assert sorted((r["sensor"], r["seq"]) for r in subscriber.readings()[32:]) == [
        ("s1-0", 8),
        ("s1-0", 9),
        ("s1-1", 8),
        ("s1-1", 9),
    ]
    assert json.loads((state / "site0.json").read_text()) == {"s0-0": 8, "s0-1": 8}
    assert json.loads((state / "site1.json").read_text()) == {"s1-0": 10, "s1-1": 10}


def test_the_state_lives_under_headwater_state_dir_by_default(
    mosquitto: tuple[str, int], subscriber: Subscriber, tmp_path: Path
) -> None:
    args = ("--broker", "{}:{}".format(*mosquitto), "--sites", "1", "--per-site", "1")
    # 12 readings at 2 a second: 5.5 s, so one progress line (one at most every 5 s)
    env = {"HEADWATER_STATE_DIR": str(tmp_path)}
    done = _sensors(*args, "--rate", "2", "--count", "12", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3, lines
    assert lines[0].endswith(
        f"2 reading/s per sensor, wall clock, 12 readings each; seq from 0 "
        f"(state: {tmp_path / 'sensors'})"
    )
    assert re.fullmatch(
        r"  sent (\d+) readings, \1 acknowledged by the broker; next seq \1", lines[1]
    ), lines[1]
    assert lines[2].startswith("published 12 readings")
    assert json.loads((tmp_path / "sensors" / "site0.json").read_text()) == {"s0-0": 12}
    wait_for(lambda: len(subscriber.readings()) >= 12, 20, "the 12 readings")
    got = subscriber.readings()
    assert [r["seq"] for r in got] == list(range(12))
    # the wall clock (the default): each ts is when it was sent, never before the last
    ts = [r["ts"] for r in got]
    assert ts == sorted(ts) and ts[0] > 1_700_000_000_000 + 365 * 86_400_000


def test_an_unreachable_broker_is_said_plainly(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = _sensors("--broker", f"127.0.0.1:{port}", "--state-dir", str(tmp_path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"headwater: error: cannot reach the MQTT broker at 127.0.0.1:{port}: [Errno 111] "
        "Connection refused; is it running there? (--broker HOST:PORT)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--broker", "nohost"), "--broker must be HOST:PORT, got 'nohost'"),
        (("--site", "site7"), "--site site7: not one of the 2 sites (site0, site1)"),
    ],
)
def test_bad_arguments_are_said_plainly(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    done = _sensors(*args, "--state-dir", str(tmp_path))
    assert (done.returncode, done.stderr) == (2, f"headwater: error: {message}\n")


class SilentBroker:
    """An MQTT 3.1.1 broker that acknowledges the first ``acked`` publishes, then never
    answers again (a broker hung, or a link gone quiet)."""

    def __init__(self, acked: int, connack: bool = True) -> None:
        import socket

        self.acked, self.connack = acked, connack
        self.published = 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            buf = b""
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 2:
                    size, shift, i = 0, 0, 1
                    while i < len(buf) and buf[i] & 0x80:
                        size |= (buf[i] & 0x7F) << shift
                        shift, i = shift + 7, i + 1
                    if i >= len(buf):
                        break
                    size |= buf[i] << shift
                    if len(buf) < i + 1 + size:
                        break
                    kind, body, buf = buf[0] >> 4, buf[i + 1 : i + 1 + size], buf[i + 1 + size :]
                    if kind == 1 and self.connack:  # CONNECT: CONNACK, accepted
                        conn.sendall(b"\x20\x02\x00\x00")
                    elif kind == 3:  # PUBLISH, QoS 1: its packet id follows the topic
                        self.published += 1
                        topic_len = int.from_bytes(body[:2], "big")
                        mid = body[2 + topic_len : 4 + topic_len]
                        if self.published <= self.acked:
                            conn.sendall(b"\x40\x02" + mid)

    def close(self) -> None:
        self.server.close()


def test_ctrl_c_while_the_broker_does_not_acknowledge_ends_the_run_and_keeps_acked_seqs(
    tmp_path: Path,
) -> None:
    import signal

    broker = SilentBroker(acked=3)
    try:
        run = subprocess.Popen(
            [
                *(sys.executable, "-m", "headwater", "sensors"),
                *("--broker", f"127.0.0.1:{broker.port}", "--sites", "1", "--per-site", "1"),
                *("--rate", "0", "--state-dir", str(tmp_path)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: broker.published >= 4, 20, "the 4th, unacknowledged reading")
            run.send_signal(signal.SIGINT)
            out, err = run.communicate(timeout=30)  # 10 s for a last acknowledgement
        finally:
            run.kill()
            run.wait()
    finally:
        broker.close()
    assert (run.returncode, err) == (0, "")
    # seq 3 was never acknowledged: the next run publishes it again, none skipped
    assert out.splitlines()[-1] == (
        f"published 3 readings (acknowledged by the broker); next seq 3, kept in {tmp_path}"
    )
    assert json.loads((tmp_path / "site0.json").read_text()) == {"s0-0": 3}


def test_a_second_run_for_the_same_sites_and_state_is_refused(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    import signal

    args = ("--broker", "{}:{}".format(*mosquitto), "--per-site", "1", "--state-dir")
    first = subprocess.Popen(
        [sys.executable, "-m", "headwater", "sensors", *args, str(tmp_path), "--site", "site1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None
        assert first.stdout.readline().startswith("publishing 1 sensors (site1)")
        # both read the same next seq and would publish every seq twice: refused
        second = _sensors(*args, str(tmp_path), "--count", "1")
        assert (second.returncode, second.stdout, second.stderr) == (
            2,
            "",
            "headwater: error: site1 is being published by another `headwater sensors` with "
            f"the state {tmp_path}: stop it first, or publish other sites (--site)\n",
        )
        # another site, or another state, goes on
        other = _sensors(*args, str(tmp_path), "--count", "1", "--site", "site0")
        assert other.returncode == 0, other.stderr
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=30)
    finally:
        first.kill()
        first.wait()
    assert first.returncode == 0


def test_an_unreadable_state_says_how_to_go_on_without_repeating_seqs(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    args = ("--broker", "{}:{}".format(*mosquitto), "--sites", "1", "--per-site", "1")
    (tmp_path / "site0.json").write_text('["not", "a", "state"]')
    refused = _sensors(*args, "--state-dir", str(tmp_path), "--count", "1")
    # not "remove it": a sensor started at 0 again would have its readings dropped
    assert (refused.returncode, refused.stderr) == (
        2,
        f"headwater: error: {tmp_path / 'site0.json'} is not a state `headwater sensors` "
        "wrote; start past the seqs published before with --first-seq N (it replaces the "
        "state)\n",
    )
    done = _sensors(*args, "--state-dir", str(tmp_path), "--count", "2", "--first-seq", "500")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "site0.json").read_text()) == {"s0-0": 502}


def test_a_broker_that_never_answers_is_not_said_to_refuse(tmp_path: Path) -> None:
    broker = SilentBroker(acked=0, connack=False)
    try:
        done = _sensors("--broker", f"127.0.0.1:{broker.port}", "--state-dir", str(tmp_path))
    finally:
        broker.close()
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"headwater: error: the MQTT broker at 127.0.0.1:{broker.port} did not answer within "
        "10s; is it an MQTT broker, and running there? (--broker HOST:PORT)\n",
    )


def test_a_run_killed_outright_never_leaves_an_acknowledged_seq_to_send_again(
    tmp_path: Path,
) -> None:
    broker = SilentBroker(acked=4)  # round 0 (seq 0 of 3 sensors), then s0-0's seq 1
    try:
        run = subprocess.Popen(
            [
                *(sys.executable, "-m", "headwater", "sensors"),
                *("--broker", f"127.0.0.1:{broker.port}", "--sites", "1", "--per-site", "3"),
                *("--rate", "0", "--state-dir", str(tmp_path)),
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            wait_for(lambda: broker.published >= 5, 20, "s0-1's seq 1, never acknowledged")
        finally:
            run.kill()  # SIGKILL: no chance to say where it stood
            run.wait()
    finally:
        broker.close()
    # s0-0's seq 1 was acknowledged: the next run must not send it again (the pipeline
    # would drop that new reading as a redelivery); the round's others are skipped
    assert json.loads((tmp_path / "site0.json").read_text()) == {"s0-0": 2, "s0-1": 2, "s0-2": 2}


def test_many_sites_hold_their_locks_without_a_descriptor_each(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    # paho's select() takes no descriptor past 1023: a lock file per site left it none
    args = ("--broker", "{}:{}".format(*mosquitto), "--sites", "1100", "--per-site", "1")
    done = _sensors(*args, "--count", "1", "--rate", "0", "--state-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        f"published 1100 readings (acknowledged by the broker); next seq 1, kept in {tmp_path}"
    )
