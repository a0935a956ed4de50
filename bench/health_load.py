"""The health manager's load: a bolt of fixed cost per record, fed from a log at a set rate.

Shared by ``bench/health.py`` and ``tests/integration/test_health_rise_fall.py``.
``source`` writes out the topology of ``tests/integration/topologies/load_step.py`` (a
durable log -> ``counter`` -> a transactional sink, exactly-once, the same config) with its
name, health policy, paths and cost baked in instead of read from the environment, so that
several run side by side on one worker; ``Writer``
appends [key, seq, pad] records to the log at a rate its driver changes as it goes;
``check_exactly_once`` reads the sink's committed rows back.

``counter`` sleeps COST seconds per record (busy time counts it), so one task keeps up with
about 1 / COST records/s (about 63 at 15 ms, on the shared 2-core machine); the pad makes a
few hundred bytes of each record and the queues are small, so that a bolt that does not keep
up holds its spout back within seconds.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

KEYS = 64
PAD = "x" * 256
COST = 0.015  # s per record: one task keeps up with about 63 records/s

TEMPLATE = """
import time
from functools import partial

from headwater import Bolt, Reliability, Topology, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink

COST = {cost!r}


class Counter(Bolt):
    outputs = ("key", "seq", "count")

    def open(self, ctx):
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")

    def process(self, tup):
        key, seq, _pad = tup.values
        time.sleep(COST)  # the fixed cost of a record
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count])


topology = (
    Topology(
        {name!r},
        config={{
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 0.5,
            "headwater.stmgr.buffer.high.bytes": 16 << 10,
            "headwater.stmgr.buffer.low.bytes": 8 << 10,
            "headwater.instance.queue.high.bytes": 8 << 10,
            "headwater.instance.queue.low.bytes": 4 << 10,
            **{policy!r},
        }},
    )
    .add_spout("log", partial(LogSpout, {log!r}, partitions=1), outputs=("key", "seq", "pad"))
    .add_bolt("counter", Counter, parallelism=1, inputs={{"log": fields("key")}})
    .add_bolt(
        "sink", partial(TransactionalFileSink, {out!r}), inputs={{"counter": fields("key")}}
    )
)
"""


def source(name: str, log: Path, out: Path, policy: dict[str, Any], cost: float = COST) -> str:
    """The topology ``name``: its log, its sink's folder, its ``headwater.health.*`` policy
    (keys without the prefix; ``{"mode": "off"}`` for a static configuration)."""
    config = {f"headwater.health.{k}": v for k, v in policy.items()}
    return TEMPLATE.format(name=name, log=str(log), out=str(out), policy=config, cost=cost)


def seed(log: Path) -> None:
    """The first KEYS records (one per key), before the topology runs."""
    from headwater.common.connectors._log_spout import append_records

    append_records(log, 0, [[f"k{i}", i, PAD] for i in range(KEYS)])


class Writer(threading.Thread):
    """Appends [key, seq, pad] records to the log at ``rate`` records/s (set it as it goes)
    until stopped, through one writer kept open (as a producer does: a log opened and closed
    for each append, 20 times a second, once left the spout's reader a record it could not
    find). ``n``: the records written, the seeded ones included."""

    def __init__(
        self,
        log: Path,
        rate: float,
        key: Callable[[int], str] | None = None,
        first: int = KEYS,
    ) -> None:
        """``key``: record ``seq``'s key (``k{seq % KEYS}`` by default); ``first``: the
        records already in the log."""
        super().__init__(daemon=True)
        self.log, self.n, self.rate, self.done = log, first, float(rate), threading.Event()
        self.key = key or (lambda seq: f"k{seq % KEYS}")

    def run(self) -> None:
        from headwater.common.state import DurableLog
        from headwater.common.wire import encode

        log = DurableLog(self.log / "p0")
        try:
            due, last = float(self.n), time.monotonic()
            while not self.done.is_set():
                now = time.monotonic()
                due, last = due + self.rate * (now - last), now
                if int(due) > self.n:
                    rows = [[self.key(i), i, PAD] for i in range(self.n, int(due))]
                    log.append([encode(r) for r in rows])
                    self.n = int(due)
                time.sleep(0.05)
        finally:
            log.close()

    def stop(self) -> int:
        self.done.set()
        self.join()
        return self.n


def committed(out: Path) -> list[list[Any]]:
    """Every row the sink committed (JSON lines) in ``out``."""
    rows: list[list[Any]] = []
    for f in sorted(out.glob("part-*.jsonl")) if out.exists() else ():
        rows.extend(json.loads(line) for line in f.read_text().splitlines())
    return rows


def exactly_once_error(rows: list[list[Any]], n: int) -> str | None:
    """None if ``rows`` count records 0..n-1 once each, the counts per key running 1, 2...;
    else what is wrong."""
    if sorted(r[1] for r in rows) != list(range(n)):
        return f"{len(rows)} rows for {n} records: gaps or duplicates"
    by_key: dict[str, list[list[Any]]] = defaultdict(list)
    for r in rows:
        by_key[r[0]].append(r)
    for key, krows in by_key.items():
        krows.sort(key=lambda r: r[1])
        if [r[2] for r in krows] != list(range(1, len(krows) + 1)):
            return f"{key}: its count broke"
    return None
