"""Integration-test topologies in the style of Heron's, on the protocol of integration_core.

headwater run examples/heron/integration_topology.py -- NAME OUTPUT_FILE

NAME picks the topology; the aggregator writes what its terminal components emitted
to OUTPUT_FILE once every spout has run out (a JSON list of tuples).
"""

import sys

from integration_components import ABCDESpout, CountAggregatorBolt, DoubleEmitBolt, IdentityBolt
from integration_core import TestTopologyBuilder

from headwater.heronpy.api.stream import Grouping


def one_spout_two_bolts(b: TestTopologyBuilder) -> None:
    spout = b.add_spout("ab-spout", ABCDESpout, 1, max_executions=10)
    b.add_bolt("identity-1", IdentityBolt, 1, inputs={spout: Grouping.SHUFFLE})
    b.add_bolt("identity-2", IdentityBolt, 1, inputs={spout: Grouping.SHUFFLE})


def fields_grouping(b: TestTopologyBuilder) -> None:
    spout = b.add_spout("ab-spout", ABCDESpout, 2, max_executions=15)
    b.add_bolt("count", CountAggregatorBolt, 3, inputs={spout: Grouping.fields("word")})


def bolt_double_emit(b: TestTopologyBuilder) -> None:
    spout = b.add_spout("ab-spout", ABCDESpout, 2, max_executions=5)
    double = b.add_bolt("double", DoubleEmitBolt, 2, inputs={spout: Grouping.SHUFFLE})
    b.add_bolt("identity", IdentityBolt, 3, inputs={double: Grouping.SHUFFLE})


TOPOLOGIES = {
    "OneSpoutTwoBolts": one_spout_two_bolts,
    "FieldsGrouping": fields_grouping,
    "BoltDoubleEmit": bolt_double_emit,
}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in TOPOLOGIES:
        print(f"usage: ... -- {'|'.join(TOPOLOGIES)} OUTPUT_FILE")
        sys.exit(1)
    builder = TestTopologyBuilder(sys.argv[1], sys.argv[2])
    TOPOLOGIES[sys.argv[1]](builder)
    builder.create_topology().write()
