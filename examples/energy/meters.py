"""Smart meters as the energy example reads them: JSON readings over MQTT with QoS 1.

    python examples/energy/meters.py --broker 127.0.0.1:1883 --sites 2 --meters 3 --count 40

Publishes, round by round, reading ``seq`` of every meter of every site on
``meters/<site>/<meter_id>``: ``{"meter_id", "site", "seq", "ts", "kwh", "voltage"}``,
``ts`` in epoch milliseconds (15 minutes apart from 2026-01-05 20:00 UTC), ``kwh`` the
energy of the interval. Every value comes from (site, meter, seq) alone
(``energy_data.py``), so what the pipeline lands can be recomputed offline: a few voltage
sags, a reading sent twice per site (as an MQTT redelivery would), and a few malformed
records per site (the pipeline's dead letters). Returns once the broker has acknowledged
every message.
"""

from __future__ import annotations

import argparse
import sys

import paho.mqtt.client as mqtt
from energy_data import messages
from paho.mqtt.enums import CallbackAPIVersion


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--broker", default="127.0.0.1:1883", help="HOST:PORT (default: %(default)s)")
    p.add_argument("--sites", type=int, default=2, help="sites (default: %(default)s)")
    p.add_argument("--meters", type=int, default=3, help="meters per site (default: %(default)s)")
    p.add_argument("--count", type=int, default=40, help="readings per meter (default: 40)")
    args = p.parse_args()
    host, _, port = args.broker.rpartition(":")
    if not host or not port.isdigit():
        sys.exit(f"--broker must be HOST:PORT, got {args.broker!r}")
    if min(args.sites, args.meters, args.count) < 1:
        sys.exit("--sites, --meters and --count must be at least 1")

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="energy-meters")
    try:
        client.connect(host, int(port))
    except OSError as exc:
        sys.exit(f"cannot reach the broker at {args.broker}: {exc}")
    client.loop_start()  # paho's thread: sends, takes the broker's acks
    sent = [
        client.publish(topic, payload, qos=1)
        for topic, payload in messages(args.sites, args.meters, args.count)
    ]
    try:
        for info in sent:
            info.wait_for_publish(30)
            if not info.is_published():
                sys.exit(f"the broker at {args.broker} did not acknowledge message {info.mid}")
    finally:
        client.disconnect()
        client.loop_stop()
    print(f"published {len(sent)} messages to {args.broker}", flush=True)


if __name__ == "__main__":
    main()
