"""Heron's custom grouping example: every word goes to the consumer's first task."""

from heron_components import ConsumeBolt, SampleCustomGrouping, WordSpout

from headwater.heronpy.api import api_constants as constants
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import Topology


class CustomGrouping(Topology):
    word_spout = WordSpout.spec(par=1)
    consume_bolt = ConsumeBolt.spec(
        par=3,
        inputs={word_spout: Grouping.custom(SampleCustomGrouping())},
        config={constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS: 10},
    )
