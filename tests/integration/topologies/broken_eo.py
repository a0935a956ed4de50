"""An exactly-once topology whose bolt cannot start: its constructor always raises."""

from headwater import Bolt, Reliability, Tuple
from headwater.dsl import Pipeline


class Broken(Bolt):
    def __init__(self) -> None:
        raise RuntimeError("the model file is missing")

    def process(self, tup: Tuple) -> None:
        pass


p = Pipeline(
    "broken",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
p.from_collection("numbers", range(100)).to("broken", Broken)
topology = p.build()
