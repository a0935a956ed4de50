"""seq spout -> relay (fails every second new tuple once when FLAKY=1) -> recording sink.

``HW_TEST_RAISE_AT``: the relay raises once on that seq (a retry then works);
``HW_TEST_SPOUT_RAISE_AT``: the spout raises once in ``next_tuple`` before emitting it;
``HW_TEST_RELAY_MS``: the relay takes that long per tuple (its inbox then always holds some).
"""

from __future__ import annotations

import os
import time

from _kit import RecordBolt, SeqSpout

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields

FLAKY = os.environ.get("HW_TEST_FLAKY") == "1"
RAISE_AT = int(os.environ.get("HW_TEST_RAISE_AT", "-1"))
SPOUT_RAISE_AT = int(os.environ.get("HW_TEST_SPOUT_RAISE_AT", "-1"))
OUT = os.environ.get("HW_TEST_OUT", "")
RELAY_S = float(os.environ.get("HW_TEST_RELAY_MS", "0")) / 1000


RAISE_IN_INIT = os.environ.get("HW_TEST_RAISE_IN_INIT") == "1"


class Seq(SeqSpout):
    def emit(self, seq: int) -> None:
        if seq == SPOUT_RAISE_AT and not os.path.exists(os.path.join(OUT, "raised-spout")):
            open(os.path.join(OUT, "raised-spout"), "w").close()
            raise RuntimeError(f"seq cannot read {seq}")
        super().emit(seq)


class Relay(Bolt):
    outputs = ("seq", "key")

    def __init__(self) -> None:
        if RAISE_IN_INIT and not os.path.exists(os.path.join(OUT, "raised-init")):
            open(os.path.join(OUT, "raised-init"), "w").close()
            raise RuntimeError("relay cannot start")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.seen: set[int] = set()
        self.n = 0

    def process(self, tup: Tuple) -> None:
        seq = tup.values[0]
        if RELAY_S:
            time.sleep(RELAY_S)
        if seq == RAISE_AT and not os.path.exists(os.path.join(OUT, "raised")):
            open(os.path.join(OUT, "raised"), "w").close()
            raise RuntimeError(f"relay cannot handle seq {seq}")
        if FLAKY and seq not in self.seen:
            self.seen.add(seq)
            self.n += 1
            if self.n % 2 == 0:
                self.ctx.fail(tup)
                return
        self.ctx.emit(tup.values, anchors=[tup])
        self.ctx.ack(tup)


topology = (
    Topology(
        "flaky",
        config={
            "topology.reliability.mode": Reliability.AT_LEAST_ONCE.value,
            "topology.message.timeout.secs": int(os.environ.get("HW_TEST_TIMEOUT", "3")),
            "topology.max.spout.pending": 200,
        },
    )
    .add_spout("seq", Seq, parallelism=2)
    .add_bolt("relay", Relay, parallelism=2, inputs={"seq": fields("seq")})
    .add_bolt("sink", RecordBolt, parallelism=2, inputs={"relay": fields("seq")})
)
