"""MQTT ingestion: sensor readings from a broker into the agent's durable log.

MQTT is not replayable, so the agent writes every message to a durable log
before the broker may forget it: paho's network thread hands each message
to a writer thread, which appends batches to the log with one synced write
and only then acknowledges each message (QoS 1, ``manual_ack``). The session
is persistent (``clean_session=False`` and a fixed client id), so whatever
was not acknowledged when the agent stopped or crashed is delivered again.
A crash between the append and the acknowledgement can therefore put a
reading in the log twice; readings carry their sensor's sequence number and
the pipeline drops repeats.

While ``should_pause()`` is true (the agent's outbox is over its byte
budget) the writer neither appends nor acknowledges: the broker's in-flight
window fills and it keeps the rest of the backlog for our session.

Threads: paho calls ``_on_message`` on its own thread; everything else in
this class runs on the writer thread, except ``start``/``stop``/``stats``,
which are threadsafe.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from headwater.common.state import DurableLog
from headwater.common.wire import encode

log = logging.getLogger("headwater.edge.ingest")


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


@dataclass
class IngestStats:
    received: int = 0
    appended: int = 0
    acked: int = 0
    paused_s: float = 0.0
    connected: bool = False  # subscribed: the broker acknowledged the subscription
    disconnects: int = 0
    trimmed: int = 0  # records dropped by retention
    partitions: dict[int, int] = field(default_factory=dict)


class MqttIngest:
    """Subscribe, append to the durable log, then acknowledge. One per agent."""

    def __init__(
        self,
        source: MqttSource,
        log_dir: str | Path,
        *,
        should_pause: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.should_pause = should_pause
        self._clock = clock
        self.logs = [DurableLog(Path(log_dir) / f"p{p}") for p in range(source.partitions)]
        self.stats = IngestStats()
        self._queue: deque[mqtt.MQTTMessage] = deque()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._trim: dict[int, int] = {}  # partition -> trim before (applied by the writer)
        self._writer = threading.Thread(target=self._write_loop, name="hw-ingest", daemon=True)
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=source.client_id,
            clean_session=False,
            manual_ack=True,
        )
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        client.reconnect_delay_set(min_delay=1, max_delay=30)
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
        for d in self.logs:
            d.close()

    def trim(self, partition: int, before: int) -> None:
        """Retention: drop the partition's records before ``before`` (the writer does it)."""
        with self._cond:
            self._trim[partition] = max(before, self._trim.get(partition, 0))

    # -- paho's thread --------------------------------------------------------------
    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:  # fmt: skip
        if reason.is_failure:
            log.warning("broker %s:%d refused the connection: %s",
                        self.source.host, self.source.port, reason)  # fmt: skip
            return
        client.subscribe([(t, 1) for t in self.source.topics])
        log.info("subscribed to %s on %s:%d (session present: %s)",
                 ", ".join(self.source.topics), self.source.host, self.source.port,
                 flags.session_present)  # fmt: skip

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, reasons: Any,
                      properties: Any) -> None:  # fmt: skip
        failed = [r for r in reasons if r.is_failure]
        if failed:
            log.error("the broker refused the subscription to %s: %s",
                      ", ".join(self.source.topics), failed)  # fmt: skip
            return
        # connected means subscribed: a reading published from now on reaches this session
        self.stats.connected = True

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any,
                       properties: Any) -> None:  # fmt: skip
        self.stats.connected = False
        self.stats.disconnects += 1

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        with self._cond:
            self._queue.append(msg)
            self.stats.received += 1
            self._cond.notify()

    # -- the writer thread ----------------------------------------------------------
    def _write_loop(self) -> None:
        paused_since: float | None = None
        while not self._stop.is_set():
            if self.should_pause():
                if paused_since is None:
                    paused_since = self._clock()
                self._stop.wait(0.05)
                continue
            if paused_since is not None:
                self.stats.paused_s += self._clock() - paused_since
                paused_since = None
            with self._cond:
                if not self._queue:
                    self._cond.wait(0.1)
                batch = [self._queue.popleft()
                         for _ in range(min(len(self._queue), self.source.batch_max))]  # fmt: skip
            if batch:
                self._append_and_ack(batch)
            if self._trim:
                with self._cond:
                    trims, self._trim = self._trim, {}
                for p, before in trims.items():
                    if 0 <= p < len(self.logs):
                        self.stats.trimmed += self.logs[p].trim(before)

    def _append_and_ack(self, batch: Sequence[mqtt.MQTTMessage]) -> None:
        now_ms = int(time.time() * 1000)
        by_partition: dict[int, list[bytes]] = {}
        n = len(self.logs)
        for msg in batch:
            p = zlib.crc32(msg.topic.encode()) % n  # one topic stays in order in one partition
            by_partition.setdefault(p, []).append(encode([msg.topic, msg.payload, now_ms]))
        for p, records in by_partition.items():
            self.logs[p].append(records)  # synced: durable when it returns
            self.stats.partitions[p] = self.stats.partitions.get(p, 0) + len(records)
        self.stats.appended += len(batch)
        for msg in batch:
            self.client.ack(msg.mid, msg.qos)
        self.stats.acked += len(batch)
