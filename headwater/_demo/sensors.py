"""Simulated sensors: publish JSON readings over MQTT (QoS 1).

    python examples/iot/sensors.py --broker 127.0.0.1:1883 --sites 2 --per-site 3 --count 100

Each reading: {"site", "sensor", "seq", "ts" (epoch ms), "value", "unit"} on topic
``sensors/<site>/<sensor>``. ``readings()`` is deterministic, so tests can
recompute the pipeline's results offline.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BASE_TS = 1_700_000_000_000  # a fixed epoch-ms start (in the past): deterministic windows


def _value(site: int, k: int, seq: int) -> float:
    """Sensor ``k`` of site ``site``'s reading number ``seq``: a wave, and every 37th is hot."""
    return 18 + 4 * site + 5 * math.sin(seq / 7 + k) + (15 if injected(seq) else 0)


def _reading(site: int, k: int, seq: int, ts: int) -> tuple[str, dict[str, Any]]:
    name, sensor = f"site{site}", f"s{site}-{k}"
    return f"sensors/{name}/{sensor}", {
        "site": name,
        "sensor": sensor,
        "seq": seq,
        "ts": ts,
        "value": round(_value(site, k, seq), 3),
        "unit": "C",
    }


def readings(
    sites: int, per_site: int, count: int, step_ms: int = 1000, first: int = 0
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(topic, reading) for ``count`` readings per sensor from seq ``first``, ``step_ms``
    apart in event time (a large step covers hours or days with few readings), interleaved."""
    for seq in range(first, first + count):
        for s in range(sites):
            for k in range(per_site):
                yield _reading(s, k, seq, BASE_TS + seq * step_ms)


def _live(sites: int, per_site: int, start: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Endless readings from seq ``start``, stamped with the wall clock."""
    seq = start
    while True:
        ts = int(time.time() * 1000)
        for s in range(sites):
            for k in range(per_site):
                yield _reading(s, k, seq, ts)
        seq += 1


def _options(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Publish simulated sensor readings over MQTT (QoS 1).",
        epilog="With --count N (default 100) the readings are deterministic: the same run gives "
        "the same readings, which the pipeline deduplicates by (sensor, seq). With --count 0 "
        "they go on until stopped, stamped with the wall clock; give --state FILE so that a "
        "restart goes on from the next seq instead of repeating old ones.",
    )
    p.add_argument("--broker", default="127.0.0.1:1883", help="the broker's HOST:PORT")
    p.add_argument("--sites", type=int, default=2, help="how many sites (site0, site1, ...)")
    p.add_argument(
        "--site", action="append", metavar="NAME", help="publish only this site (repeatable)"
    )
    p.add_argument("--per-site", type=int, default=3, help="sensors per site")
    p.add_argument("--count", type=int, default=100, help="readings per sensor; 0: until stopped")
    p.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="readings per second per sensor (default: as fast as the broker takes them)",
    )
    p.add_argument(
        "--state", metavar="FILE", help="--count 0: where the run stands (seq, readings of it)"
    )
    p.add_argument(
        "--first-seq",
        type=int,
        default=0,
        metavar="N",
        help="--count N: start at this seq (a second run after the first: --first-seq N)",
    )
    p.add_argument("--client-id", help="the MQTT client id (default: headwater-sensors-SITES)")
    p.add_argument("--username", help="the broker account to log in as")
    p.add_argument(
        "--password-file",
        metavar="FILE",
        help="a file holding that account's password (or set HEADWATER_MQTT_PASSWORD)",
    )
    args = p.parse_args(argv)
    if args.sites < 1 or args.per_site < 1 or min(args.count, args.rate, args.first_seq) < 0:
        p.error(
            "--sites and --per-site must be at least 1, --count, --rate and --first-seq "
            "not negative"
        )
    host, _, port = args.broker.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        p.error(f"--broker must be HOST:PORT, got {args.broker!r}")
    known = {f"site{s}" for s in range(args.sites)}
    unknown = sorted(set(args.site or ()) - known)
    if unknown:
        p.error(f"--site {unknown[0]} is not one of the {args.sites} sites (site0..)")
    args.password = os.environ.get("HEADWATER_MQTT_PASSWORD")
    if args.password_file:
        try:
            args.password = Path(args.password_file).read_text().strip()
        except OSError as exc:
            p.error(f"cannot read --password-file: {exc.strerror}")
    return args


class _Acks:
    """The broker's acknowledgements (QoS 1 PUBACKs): what was published, counted."""

    def __init__(self) -> None:
        self.count = 0
        self._cond = threading.Condition()

    def on_publish(self, *_: Any) -> None:
        with self._cond:
            self.count += 1
            self._cond.notify_all()

    def wait(self, count: int, stop: threading.Event | None, timeout: float | None) -> bool:
        """Until ``count`` are acknowledged (or ``stop`` is set, or ``timeout`` passes)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self.count >= count or (stop is not None and stop.is_set()), timeout
            )


def main(argv: list[str] | None = None) -> None:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    args = _options(argv)
    wanted = set(args.site or (f"site{s}" for s in range(args.sites)))
    host, _, port = args.broker.rpartition(":")
    state = Path(args.state) if args.state else None
    start = skip = 0  # the seq to go on from, and how many of its readings went already
    if state is not None and state.exists():
        kept = state.read_text().split()
        if not 1 <= len(kept) <= 2 or not all(n.isdigit() for n in kept):
            sys.exit(f"sensors: {state} is not a state this program wrote; remove it")
        start, skip = int(kept[0]), int(kept[1]) if len(kept) == 2 else 0
    position = skip  # readings of the current seq published, this run and the last
    client_id = args.client_id or "headwater-sensors-" + "-".join(sorted(wanted))
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
    if args.username:
        client.username_pw_set(args.username, args.password)
    acks = _Acks()
    client.on_publish = acks.on_publish
    client.connect_async(host, int(port))  # the loop connects, and reconnects after a loss
    client.loop_start()
    source = (
        readings(args.sites, args.per_site, args.count, first=args.first_seq)
        if args.count
        else _live(args.sites, args.per_site, start)
    )
    per_round = len(wanted) * args.per_site
    sent = 0
    began = time.monotonic()
    stop = threading.Event()  # SIGTERM (docker stop) ends the run between two readings
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        for topic, reading in source:
            if stop.is_set():
                break
            if reading["site"] not in wanted:
                continue
            if skip:  # a reading the last run published before it stopped mid-round
                skip -= 1
                continue
            while not client.is_connected():  # the broker is away: paho reconnects
                if stop.wait(0.1):
                    break
            if stop.is_set():
                break
            # QoS 1: if the link drops before the broker's PUBACK, paho sends it again on
            # reconnect (a duplicate, which the pipeline drops by seq); only PUBACKs count
            client.publish(topic, json.dumps(reading), qos=1)
            sent += 1
            acks.wait(sent, stop, None)  # one in flight at a time
            position += 1
            if state is not None:  # where a restart goes on: no seq twice, none skipped
                done = position % per_round
                tmp = state.with_suffix(".tmp")
                tmp.write_text(f"{reading['seq'] + (done == 0)} {done}\n")
                tmp.replace(state)
            if sent % per_round:
                continue
            if args.rate:
                stop.wait(max(0.0, began + sent / per_round / args.rate - time.monotonic()))
    except KeyboardInterrupt:
        pass
    finally:
        acks.wait(sent, None, 10.0)  # the last reading's PUBACK
        client.disconnect()
        client.loop_stop()
    print(f"published {acks.count} readings", file=sys.stderr)


if __name__ == "__main__":
    main()


def injected(seq: int) -> bool:
    """The truth of the example: ``readings()`` injects an anomaly (+15) where this holds.

    ``headwater spark train``'s default ``--labels`` (per landed row, by its seq).
    """
    return seq % 37 == 11
