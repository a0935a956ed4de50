"""Heron's multi-stream example (Topology class style): a spout with two streams."""

from heron_components import CountBolt, MultiStreamSpout, StreamAggregateBolt

from headwater.heronpy.api import api_constants as constants
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import Topology


class MultiStream(Topology):
    spout = MultiStreamSpout.spec(par=2)
    count_bolt = CountBolt.spec(
        par=2,
        inputs={spout: Grouping.fields("word")},
        config={constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS: 10},
    )
    stream_aggregator = StreamAggregateBolt.spec(
        par=1,
        inputs={spout: Grouping.ALL, spout["error"]: Grouping.ALL},
        config={constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS: 15},
    )
