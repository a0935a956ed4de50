"""A DSL window join on a cluster: orders and payments per customer, outer, in 10 s windows.

DSL_OUT: output folder.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from headwater import Reliability
from headwater.common.connectors import TransactionalFileSink
from headwater.dsl import Pipeline, Tumbling

OUT = os.environ.get("DSL_OUT", "/tmp/hw-dsl-join")
ORDERS = [{"c": f"c{i % 4}", "ts": i * 1000, "order": i} for i in range(40)]
PAYMENTS = [{"c": f"c{i % 5}", "ts": i * 1000, "paid": i} for i in range(0, 40, 2)]


def pair(order: dict[str, Any] | None, payment: dict[str, Any] | None) -> list[Any]:
    return [order and order["order"], payment and payment["paid"]]


p = Pipeline(
    "dsljoin",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
orders = p.from_collection("orders", ORDERS).key_by("by_customer", lambda o: o["c"])
payments = p.from_collection("payments", PAYMENTS).key_by("paid_by", lambda o: o["c"])
(
    orders.join(
        "matched",
        payments,
        Tumbling(10_000),
        pair,
        timestamp=lambda r: r["ts"],
        how="outer",
        out_of_orderness=60_000,
        parallelism=2,
    ).to("sink", partial(TransactionalFileSink, OUT))
)
topology = p.build()
