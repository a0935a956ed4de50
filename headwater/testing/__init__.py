"""The in-memory test kit: unit-test components and whole topologies without processes.

- ``TestContext``: a ``headwater.Context`` that records what a component emits (per
  stream), acks, fails, counts and dead-letters; hand it to ``open`` and call the
  component yourself.
- ``TestSource`` / ``TestSink``: a spout over a list, a bolt that fills one.
- ``run_main`` / ``LocalRun``: a topology or a DSL pipeline run in this process,
  single-threaded and deterministic, with the runtime's groupings and poison-record
  policy (see ``LocalRun`` for what it does not model).
- ``ManualClock``: a clock that moves only when told (``advance``).

>>> from functools import partial
>>> from headwater import Topology, fields
>>> out: list = []
>>> t = (Topology("t")
...      .add_spout("src", partial(TestSource, [("a", 1), ("b", 2)]), outputs=("k", "n"))
...      .add_bolt("sink", partial(TestSink, out), inputs={"src": fields("k")}))
>>> _ = run_main(t)
>>> out
[['a', 1], ['b', 2]]
"""

from headwater.common import runtime as _runtime  # noqa: F401  (resolves system components)
from headwater.common._clock import ManualClock

from ._components import TestSink, TestSource
from ._context import Emitted, TestContext
from ._run import LocalRun, run_main

__all__ = [
    "Emitted",
    "LocalRun",
    "ManualClock",
    "TestContext",
    "TestSink",
    "TestSource",
    "run_main",
]
