"""Heron's stateful word count example (EFFECTIVELY_ONCE), ported."""

import sys

from heron_components import StatefulCountBolt, StatefulWordSpout

from headwater.heronpy.api import api_constants as constants
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import TopologyBuilder

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Topology's name is not specified")
        sys.exit(1)
    builder = TopologyBuilder(name=sys.argv[1])
    word_spout = builder.add_spout("word_spout", StatefulWordSpout, par=2)
    builder.add_bolt(
        "count_bolt",
        StatefulCountBolt,
        par=2,
        inputs={word_spout: Grouping.fields("word")},
        config={constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS: 10},
    )
    builder.set_config(
        {
            constants.TOPOLOGY_RELIABILITY_MODE: constants.TopologyReliabilityMode.EFFECTIVELY_ONCE,
            constants.TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS: 1,
        }
    )
    builder.build_and_submit()
