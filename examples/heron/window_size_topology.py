"""Heron's window size example: words into a sliding window bolt (10 s windows every 2 s).

headwater run examples/heron/window_size_topology.py --duration 30 -- WindowSize
"""

import sys

from heron_components import WindowSizeBolt, WordSpout

from headwater.heronpy.api import api_constants as constants
from headwater.heronpy.api.bolt.window_bolt import SlidingWindowBolt
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import TopologyBuilder

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Topology's name is not specified")
        sys.exit(1)
    builder = TopologyBuilder(name=sys.argv[1])
    word_spout = builder.add_spout("word_spout", WordSpout, par=2)
    builder.add_bolt(
        "window_size_bolt",
        WindowSizeBolt,
        par=2,
        inputs={word_spout: Grouping.fields("word")},
        config={
            SlidingWindowBolt.WINDOW_DURATION_SECS: 10,
            SlidingWindowBolt.WINDOW_SLIDEINTERVAL_SECS: 2,
        },
    )
    builder.set_config(
        {constants.TOPOLOGY_RELIABILITY_MODE: constants.TopologyReliabilityMode.ATLEAST_ONCE}
    )
    builder.build_and_submit()
