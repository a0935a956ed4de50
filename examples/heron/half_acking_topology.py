"""Heron's half-acking example: every other tuple fails and the spout hears of it."""

import sys

from heron_components import HalfAckBolt, WordSpout

from headwater.heronpy.api import api_constants as constants
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import TopologyBuilder

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Topology's name is not specified")
        sys.exit(1)
    builder = TopologyBuilder(name=sys.argv[1])
    word_spout = builder.add_spout("word_spout", WordSpout, par=2)
    builder.add_bolt(
        "half_ack_bolt",
        HalfAckBolt,
        par=2,
        inputs={word_spout: Grouping.fields("word")},
        config={constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS: 10},
    )
    builder.set_config(
        {
            constants.TOPOLOGY_RELIABILITY_MODE: constants.TopologyReliabilityMode.ATLEAST_ONCE,
            constants.TOPOLOGY_MAX_SPOUT_PENDING: 100000000,
            constants.TOPOLOGY_MESSAGE_TIMEOUT_SECS: 300,
        }
    )
    builder.build_and_submit()
