"""Heron's word count example (TopologyBuilder style), ported."""

import sys

from heron_components import CountBolt, WordSpout

from headwater.heronpy.api import api_constants as constants
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import TopologyBuilder

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Topology's name is not specified")
        sys.exit(1)
    builder = TopologyBuilder(name=sys.argv[1])
    word_spout = builder.add_spout("word_spout", WordSpout, par=2)
    count_bolt = builder.add_bolt(
        "count_bolt",
        CountBolt,
        par=2,
        inputs={word_spout: Grouping.fields("word")},
        config={constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS: 10},
    )
    builder.set_config(
        {constants.TOPOLOGY_RELIABILITY_MODE: constants.TopologyReliabilityMode.ATLEAST_ONCE}
    )
    builder.build_and_submit()
