"""An embedded MQTT broker (amqtt) for the demo when Mosquitto is not installed.

python -m headwater._demo.broker --port 1883
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import warnings


async def serve(port: int) -> None:
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from amqtt.broker import Broker

    broker = Broker(
        {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
            "auth": {"allow-anonymous": True},
            "topic-check": {"enabled": False},
        }
    )
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await broker.shutdown()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, default=1883)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
