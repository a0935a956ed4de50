"""One spout, one recording consumer per grouping, three tasks each."""

from __future__ import annotations

from typing import Any

from _kit import RecordBolt, SeqSpout

from headwater import Stream, Topology, all_tasks, custom, direct, fields, global_, none, shuffle


class DirectSeqSpout(SeqSpout):
    """Also sends each seq to task number seq % 3 of 'direct' on a direct stream."""

    outputs = (Stream(("seq", "key")), Stream(("seq",), name="to_task", direct=True))

    def emit(self, seq: int) -> None:
        super().emit(seq)
        tasks = self.ctx.component_tasks("direct")
        self.ctx.emit([seq], "to_task", direct_task=tasks[seq % 3])


class EvenOdd:
    """Custom grouping: even seqs to the first task, odd to the second."""

    def prepare(self, context: Any, component: str, stream: str, target_tasks: list[int]) -> None:
        self.tasks = target_tasks

    def choose_tasks(self, values: list[Any]) -> list[int]:
        return [self.tasks[values[0] % 2]]


topology = Topology("groupings").add_spout("seq", DirectSeqSpout)
for name, grouping in [
    ("shuffle", shuffle()),
    ("fields", fields("key")),
    ("all", all_tasks()),
    ("global", global_()),
    ("none", none()),
    ("custom", custom(EvenOdd())),
]:
    topology = topology.add_bolt(name, RecordBolt, parallelism=3, inputs={"seq": grouping})
topology = topology.add_bolt(
    "direct", RecordBolt, parallelism=3, inputs={("seq", "to_task"): direct()}
)
