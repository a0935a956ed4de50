"""MQTT ingestion: sensor readings from a broker into the agent's durable log.

MQTT is not replayable, so the agent writes every message to a durable log
before the broker may forget it: paho's network thread hands each message
to a writer thread, which appends batches to the log with one synced write
and only then acknowledges each message (QoS 1, ``manual_ack``). The session
is persistent (``clean_session=False`` and a fixed client id), so whatever
was not acknowledged when the agent stopped or crashed is delivered again.
A crash between the append and the acknowledgement can therefore put a
reading in the log twice, and so can a batch whose append failed on one
partition after another partition took its part (the writer retries the batch
whole); readings carry their sensor's sequence number and the pipeline drops
repeats.

While ``should_pause()`` is true (the agent's outbox is over its byte
budget) the writer neither appends nor acknowledges: the broker's in-flight
window fills and it keeps the rest of the backlog for our session.

Faults never kill the writer, and each shows in the node's health:

- An append that fails (disk full, RocksDB errors) is not acknowledged: the
  writer keeps the batch, reopens the log and retries with backoff, while the
  broker keeps everything after it. ``ingest`` is ``failed`` with the reason
  (``disk full on /path (No space left on device)``) until an append
  succeeds again. A log that cannot be opened (an agent started on a full
  disk) is retried the same way.
- A log folder deleted under the writer (the agent's workdir removed) would
  take appends into files no one can see: the writer checks the folder before
  each acknowledgement, acknowledges nothing more, and reports
  ``workdir /path is gone`` until the agent is restarted.
- The broker out of reach (at start or later): ``mqtt`` is ``degraded``,
  naming the broker's address, within ``CONNECT_GRACE_S`` and until the
  subscription is back; the persistent session keeps what was published.

Memory is bounded: the queue between paho's thread and the writer holds at
most ``queue_max_messages`` messages and ``queue_max_bytes`` bytes. A QoS 0
message that arrives while it is full is dropped and counted
(``IngestStats.dropped_qos0``). QoS 1 is never dropped: it cannot outgrow the
broker's in-flight window (Mosquitto's ``max_inflight_messages``, 20 by
default), because nothing is acknowledged before it is written.

Threads: paho calls ``_on_message`` on its own thread; everything else in
this class runs on the writer thread, except ``start``/``stop``/``stats``,
which are threadsafe.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from headwater.common._health import DEGRADED, FAILED, Health
from headwater.common._retry import RetryPolicy

from ._ingest_log import IngestLog, describe_write_error

log = logging.getLogger("headwater.edge.ingest")
__all__ = ["IngestStats", "MqttIngest", "MqttSource", "describe_write_error"]
CONNECT_GRACE_S = 3.0  # not subscribed for this long: the broker is reported unreachable
RETRY = RetryPolicy(0.1, 5.0, jitter=False)  # a failed append or open is retried after these
_MESSAGE_OVERHEAD = 200  # bytes a queued message costs beside its topic and payload


@dataclass(frozen=True)
class MqttSource:
    """Where readings come from."""

    host: str = "127.0.0.1"
    port: int = 1883
    topics: tuple[str, ...] = ("sensors/#",)
    client_id: str = "headwater-agent"
    partitions: int = 1
    keepalive_s: int = 30
    batch_max: int = 500  # messages per synced append
    queue_max_messages: int = 10_000  # received, not yet written (QoS 0 beyond it is dropped)
    queue_max_bytes: int = 32 << 20
    # the broker's credentials and TLS (docs/design.md, "MQTT credentials and TLS")
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False  # TLS with the system's CAs (implied by any file below)
    ca_file: str | None = None  # the CA that signed the broker's certificate
    cert_file: str | None = None  # a client certificate (with key_file)
    key_file: str | None = None

    @property
    def uses_tls(self) -> bool:
        return self.tls or bool(self.ca_file or self.cert_file)


@dataclass
class IngestStats:
    received: int = 0
    appended: int = 0
    acked: int = 0
    dropped_qos0: int = 0  # QoS 0 messages that arrived while the queue was full
    queued: int = 0  # messages waiting for the writer
    queued_bytes: int = 0
    write_errors: int = 0  # failed appends and opens of the log (each retried)
    paused_s: float = 0.0
    connected: bool = False  # subscribed: the broker acknowledged the subscription
    disconnects: int = 0
    trimmed: int = 0  # records dropped by retention
    partitions: dict[int, int] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)  # per partition: the next offset (log end)


class MqttIngest:
    """Subscribe, append to the durable log, then acknowledge. One per agent.

    ``health`` (the node's) gets the ``mqtt`` and ``ingest`` reasons; without
    one, the ingest keeps its own.
    """

    def __init__(
        self,
        source: MqttSource,
        log_dir: str | Path,
        *,
        should_pause: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
        health: Health | None = None,
    ) -> None:
        self.source = source
        self.should_pause = should_pause
        self._clock = clock
        self.health = health if health is not None else Health("ingest")
        self.log_dir = Path(log_dir)
        self.disk = IngestLog(self.log_dir, source.partitions)  # the writer's
        self.stats = IngestStats()
        # (connection generation, message): a message from an earlier connection is not
        # acknowledged on a later one (its packet id may name another message by then)
        self._queue: deque[tuple[int, mqtt.MQTTMessage]] = deque()
        self._generation = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._trim: dict[int, int] = {}  # partition -> trim before (applied by the writer)
        self._down_since: float | None = clock()  # not subscribed since (None: subscribed)
        self._over_bound_warned = False
        self._qos1_queued = 0  # QoS 1 and 2 messages in the queue
        with contextlib.suppress(Exception):  # a full disk: the writer keeps trying
            self.disk.open()
        self._writer = threading.Thread(target=self._writer_main, name="hw-ingest", daemon=True)
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=source.client_id,
            clean_session=False,
            manual_ack=True,
        )
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        client.reconnect_delay_set(min_delay=1, max_delay=30)
        if source.username is not None:
            client.username_pw_set(source.username, source.password)
        if source.uses_tls:  # the broker's certificate and host name are verified
            client.tls_set(
                ca_certs=source.ca_file, certfile=source.cert_file, keyfile=source.key_file
            )
        self.client = client

    # -- lifecycle (threadsafe) -------------------------------------------------
    def start(self) -> None:
        self._writer.start()
        self.client.connect_async(self.source.host, self.source.port, self.source.keepalive_s)
        self.client.loop_start()

    def stop(self) -> None:
        """Stop taking messages; what was appended stays, what was not is redelivered later."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self._writer.join(5)
        self.client.disconnect()
        self.client.loop_stop()
        self.disk.close()

    def trim(self, partition: int, before: int) -> None:
        """Retention: drop the partition's records before ``before`` (the writer does it)."""
        with self._cond:
            self._trim[partition] = max(before, self._trim.get(partition, 0))

    # -- paho's thread --------------------------------------------------------------
    @property
    def broker(self) -> str:
        return f"{self.source.host}:{self.source.port}"

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        if reason.is_failure:
            self.health.set(
                "mqtt", DEGRADED, f"broker {self.broker} refused the connection: {reason}"
            )
            return
        client.subscribe([(t, 1) for t in self.source.topics])
        log.info(
            "subscribed to %s on %s:%d (session present: %s)",
            ", ".join(self.source.topics),
            self.source.host,
            self.source.port,
            flags.session_present,
        )

    def _on_subscribe(
        self, client: mqtt.Client, userdata: Any, mid: int, reasons: Any, properties: Any
    ) -> None:
        failed = [r for r in reasons if r.is_failure]
        if failed:
            log.error(
                "the broker refused the subscription to %s: %s",
                ", ".join(self.source.topics),
                failed,
            )
            return
        # connected means subscribed: a reading published from now on reaches this session
        self.stats.connected = True
        self._down_since = None
        self.health.clear("mqtt")

    def _on_connect_fail(self, client: mqtt.Client, userdata: Any) -> None:
        self.health.set("mqtt", DEGRADED, f"broker {self.broker} unreachable (retrying)")

    def _on_disconnect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        with self._cond:
            # what is queued is still written (a broker restarted without persistence would
            # not send it again) but not acknowledged on the next connection
            self._generation += 1
        was = self.stats.connected
        self.stats.connected = False
        self.stats.disconnects += 1
        if self._down_since is None:
            self._down_since = self._clock()
        if was and not self._stop.is_set():
            self.health.set(
                "mqtt",
                DEGRADED,
                f"connection to broker {self.broker} lost ({reason}); reconnecting",
            )

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        size = len(msg.payload) + len(msg._topic) + _MESSAGE_OVERHEAD
        st, src = self.stats, self.source
        with self._cond:
            st.received += 1
            if st.queued >= src.queue_max_messages or st.queued_bytes + size > src.queue_max_bytes:
                if msg.qos == 0:
                    st.dropped_qos0 += 1
                    return
                if self._qos1_queued >= src.queue_max_messages and not self._over_bound_warned:
                    self._over_bound_warned = True  # the broker's in-flight window should bound it
                    log.warning(
                        "QoS %d messages beyond the ingest queue's bound (%d messages, "
                        "%d bytes): is the broker's in-flight window unlimited?",
                        msg.qos,
                        src.queue_max_messages,
                        src.queue_max_bytes,
                    )
            self._queue.append((self._generation, msg))
            self._qos1_queued += msg.qos > 0
            st.queued += 1
            st.queued_bytes += size
            self._cond.notify()

    def _dequeued(self, msg: mqtt.MQTTMessage) -> None:
        self._qos1_queued -= msg.qos > 0
        self.stats.queued -= 1
        self.stats.queued_bytes -= len(msg.payload) + len(msg._topic) + _MESSAGE_OVERHEAD

    # -- the writer thread (its log on disk: _ingest_log.py) ---------------------------
    def _failed(self, exc: BaseException) -> None:
        self.stats.write_errors += 1
        message = self.disk.failure(exc)
        if not self.health.has("ingest"):
            log.debug("ingest write failed", exc_info=exc)
        self.health.set("ingest", FAILED, message)

    def _watch_broker(self) -> None:
        down = self._down_since
        if (
            down is not None
            and not self.health.has("mqtt")
            and self._clock() - down >= CONNECT_GRACE_S
        ):
            self.health.set(
                "mqtt",
                DEGRADED,
                f"broker {self.broker} unreachable: not connected "
                f"for {self._clock() - down:.0f}s (retrying)",
            )

    def _writer_main(self) -> None:
        try:
            self._write_loop()
        finally:  # only a bug gets here: say so rather than stall with acknowledgement stopped
            if not self._stop.is_set():
                self.health.set(
                    "ingest",
                    FAILED,
                    "the ingest writer thread stopped (a bug: see the log); restart the agent",
                )
                log.exception("the ingest writer thread stopped")

    def _write_loop(self) -> None:
        paused_since: float | None = None
        batch: list[tuple[int, mqtt.MQTTMessage]] = []  # taken, not yet written and acked
        retry = RETRY.start()
        failing = False
        while not self._stop.is_set():
            self._watch_broker()
            try:
                self.disk.open()
                if failing and not batch:
                    self.disk.probe()  # nothing to write: does the disk take writes again?
                    failing = False
                    retry.reset()
                    self.health.clear("ingest")
                if self.should_pause():
                    if paused_since is None:
                        paused_since = self._clock()
                    self._stop.wait(0.05)
                    continue
                if paused_since is not None:
                    self.stats.paused_s += self._clock() - paused_since
                    paused_since = None
                if not batch:
                    batch = self._take()
                if batch:
                    self._append_and_ack(batch)
                    batch = []
                    if failing:
                        failing = False
                        retry.reset()
                        self.health.clear("ingest")
                self._apply_trims()
            except Exception as exc:  # never dies: report, reopen, retry after a while
                failing = True
                self._failed(exc)
                self.disk.close()
                self._stop.wait(retry.next_delay())

    def _take(self) -> list[tuple[int, mqtt.MQTTMessage]]:
        with self._cond:
            if not self._queue:
                self._cond.wait(0.1)
            batch = [
                self._queue.popleft() for _ in range(min(len(self._queue), self.source.batch_max))
            ]
            for _, msg in batch:
                self._dequeued(msg)
        return batch

    def _apply_trims(self) -> None:
        if not self._trim:
            return
        with self._cond:
            trims, self._trim = self._trim, {}
        try:
            for p, before in trims.items():
                self.stats.trimmed += self.disk.trim(p, before)
        except BaseException:
            for p, before in trims.items():  # again once the log is back
                self.trim(p, before)
            raise

    def _append_and_ack(self, batch: Sequence[tuple[int, mqtt.MQTTMessage]]) -> None:
        now_ms = int(time.time() * 1000)
        readings = [(msg.topic, msg.payload) for _, msg in batch]
        self.disk.append(readings, now_ms, self.stats.partitions)  # synced: durable
        self.stats.appended += len(batch)
        self.stats.ends = {p: d.end for p, d in enumerate(self.disk.logs)}
        self.disk.check_present()  # written into a folder that is still there, or not acked
        generation = self._generation
        for gen, msg in batch:
            if gen == generation:
                self.client.ack(msg.mid, msg.qos)
                self.stats.acked += 1
