"""A sensor as the IoT example reads it: JSON readings published over MQTT with QoS 1.

    python examples/iot/sensors.py --broker 127.0.0.1:1883 --site site0 --count 20

To feed an agent or the demo's pipeline with many sensors, paced, run `headwater sensors`
(see `headwater sensors --help`); this file shows the few lines a real device needs.

A reading is ``{"site", "sensor", "seq", "ts", "value", "unit"}`` on the topic
``sensors/<site>/<sensor>``. ``seq`` counts the sensor's readings: the pipeline drops a
seq it has seen (an MQTT redelivery), so the next one is kept in a file (``--state``) and
a second run goes on from it. ``ts`` is when the reading is taken, in epoch milliseconds.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion


def publish(client: mqtt.Client, topic: str, payload: str) -> None:
    """Returns once the broker has acknowledged the reading (QoS 1), however often the link
    drops meanwhile: paho sends an unacknowledged reading again when it reconnects."""
    while True:
        while not client.is_connected():
            time.sleep(0.1)  # the broker is away: paho's thread reconnects
        info = client.publish(topic, payload, qos=1)
        try:
            info.wait_for_publish()
            return
        except RuntimeError:  # the link dropped as it was sent: send it again (same seq)
            time.sleep(0.1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--broker", default="127.0.0.1:1883", help="HOST:PORT (default: %(default)s)")
    p.add_argument("--site", default="site0", help="the site's name (default: %(default)s)")
    p.add_argument("--sensor", default="t0", help="the sensor's name (default: %(default)s)")
    p.add_argument("--count", type=int, default=20, help="readings to send (default: 20)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds apart (default: 1)")
    p.add_argument("--state", help="the file keeping the next seq (default: ./SITE-SENSOR.seq)")
    args = p.parse_args()
    host, _, port = args.broker.rpartition(":")
    state = Path(args.state or f"{args.site}-{args.sensor}.seq")
    seq = int(state.read_text()) if state.exists() else 0

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{args.site}-{args.sensor}")
    client.connect_async(host, int(port))
    client.loop_start()  # a thread of paho's: connects, sends, takes the broker's acks, reconnects
    topic = f"sensors/{args.site}/{args.sensor}"
    for n in range(args.count):
        value = 20 + 3 * math.sin(seq / 10) + random.gauss(0, 0.3)
        reading = {
            "site": args.site,
            "sensor": args.sensor,
            "seq": seq,
            "ts": int(time.time() * 1000),
            "value": round(value, 3),
            "unit": "C",
        }
        publish(client, topic, json.dumps(reading))
        seq += 1
        state.write_text(f"{seq}\n")  # acknowledged: the next run goes on after it
        print(f"{topic} seq {reading['seq']} value {reading['value']}", flush=True)
        if n + 1 < args.count:
            time.sleep(args.interval)
    client.disconnect()
    client.loop_stop()


if __name__ == "__main__":
    main()
