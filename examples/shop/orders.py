"""Your own topology, landed for Spark: a shop's orders as a stream, then as a dataset.

    headwater run examples/shop/orders.py --duration 30

The spout ``orders`` emits ``SHOP_ORDERS`` orders (default 600), at most ``SHOP_RATE``
a second (default 100; 0: as fast as it can), then nothing more. Each order is
``order_id, shop, amount, refunded, ts``: ``ts`` in epoch ms, an order every 6 minutes
of event time from 2026-11-02 08:00 UTC (600 orders: two and a half days), ``shop`` one
of three, ``amount`` in the currency's units with cents, ``refunded`` true for about one
order in twelve. The same index always makes the same order (``order(i)``), so a run
lands the same rows every time.

``land_orders`` (``LandingSink``) lands them as the dataset ``orders`` under
``$SHOP_OUT/landing`` (``SHOP_OUT``, else ``./shop-out`` under the current folder),
partitioned by the UTC date of ``ts``: what ``headwater spark rollup`` and the Spark
job ``revenue.py`` beside this file read. Exactly once: the spout's next index is its
checkpointed state and the sink publishes what a completed checkpoint covered, so a run
stopped at any moment has landed each order at most once, a prefix of them, in order.
Each ``headwater run`` starts from order 0 (and lands the orders again) unless it is given
the ``--workdir`` of the run before, whose checkpoints it resumes from.
"""

from __future__ import annotations

import os
import random
import sys
import time
from functools import partial
from typing import Any

from headwater import Context, Reliability, Spout, Topology, shuffle
from headwater.connectors import LandingSink

ORDERS = int(os.environ.get("SHOP_ORDERS", "600"))
RATE = float(os.environ.get("SHOP_RATE", "100"))
SHOPS = ("lisbon", "porto", "faro")
START_MS = 1_793_606_400_000  # 2026-11-02 08:00:00 UTC
STEP_MS = 6 * 60_000  # an order every 6 minutes of event time
COLUMNS = ("order_id", "shop", "amount", "refunded", "ts")


def out_dir() -> str:
    """``SHOP_OUT``, else ``shop-out`` under the current folder (said on stderr)."""
    out = os.environ.get("SHOP_OUT")
    if out:
        return out
    out = os.path.abspath("shop-out")
    print(f"SHOP_OUT is not set: the shop example lands under {out}", file=sys.stderr)
    return out


def order(i: int) -> list[Any]:
    """Order ``i``: the same values on every run (its own seeded generator)."""
    rng = random.Random(i)
    shop = rng.choice(SHOPS)
    amount = round(rng.uniform(4.0, 120.0), 2)
    return [i, shop, amount, rng.random() < 1 / 12, START_MS + i * STEP_MS]


class Orders(Spout):
    """``order(0)``, ``order(1)``, ... up to ``ORDERS``, paced; the next index is state."""

    outputs = COLUMNS

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.state = ctx.state  # checkpointed: a restore resumes from the index it holds
        self.next_at = time.monotonic()

    def exhausted(self) -> bool:
        return int(self.state.get("next", 0)) >= ORDERS

    def next_tuple(self) -> None:
        if self.exhausted():
            return
        if RATE > 0:
            now = time.monotonic()
            if now < self.next_at:
                return
            self.next_at = max(self.next_at, now - 1.0) + 1.0 / RATE
        i = int(self.state.get("next", 0))
        self.ctx.emit(order(i))
        self.state["next"] = i + 1


OUT = out_dir()

topology = (
    Topology(
        "shop",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 1,
        },
    )
    .add_spout("orders", Orders)
    .add_bolt(
        "land_orders",
        partial(LandingSink, f"{OUT}/landing", "orders", event_time="ts"),
        inputs={"orders": shuffle()},
    )
)
