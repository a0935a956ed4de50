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
from collections.abc import Iterator
from typing import Any

BASE_TS = 1_700_000_000_000  # a fixed epoch-ms start (in the past): deterministic windows


def readings(sites: int, per_site: int, count: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(topic, reading) for ``count`` readings per sensor, one second apart, interleaved."""
    for seq in range(count):
        for s in range(sites):
            for k in range(per_site):
                site, sensor = f"site{s}", f"s{s}-{k}"
                value = 18 + 4 * s + 5 * math.sin(seq / 7 + k) + (15 if seq % 37 == 11 else 0)
                yield (
                    f"sensors/{site}/{sensor}",
                    {
                        "site": site,
                        "sensor": sensor,
                        "seq": seq,
                        "ts": BASE_TS + seq * 1000,
                        "value": round(value, 3),
                        "unit": "C",
                    },
                )


def main() -> None:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--broker", default="127.0.0.1:1883")
    p.add_argument("--sites", type=int, default=2)
    p.add_argument("--per-site", type=int, default=3)
    p.add_argument("--count", type=int, default=100)
    args = p.parse_args()
    host, _, port = args.broker.rpartition(":")
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="headwater-sensors")
    client.connect(host, int(port))
    client.loop_start()
    for topic, reading in readings(args.sites, args.per_site, args.count):
        client.publish(topic, json.dumps(reading), qos=1).wait_for_publish(10)
    client.disconnect()
    client.loop_stop()


if __name__ == "__main__":
    main()
