"""An instance process: one task of one component, as in Heron's two-thread instance.

An instance is a pipeline, each stage in its module and each taking a small
protocol of what it needs, never the instance:

- the gateway thread (``_gateway.py``) moves frames between the stmgr's Unix
  socket and two bounded queues;
- the input gate (``_input_gate.py``) takes each frame from the inbox: it
  aligns checkpoint barriers (holding back, then replaying in order, what an
  input sent past its marker), waits for the first restore and switches to a
  live edit's revision at its checkpoint;
- the executor (``_executor.py``) runs user code on what passes the gate, on
  the main thread: its loops, a frame's records, acks and control messages
  (``_instance_control.py``), metrics (``_instance_metrics.py``);
- what the component emits, acks and fails, and its dead letters
  (``_outputs.py``), go through the emitter (``_emitter.py``, routing and
  batches) to the outbox.

A record on which a bolt's ``process`` raises is retried and then
dead-lettered; any other exception in user code (``open``, a spout's
``next_tuple``, a tick) is logged with its traceback, reported to the stmgr,
and ends the process with status 1; the container restarts it
(``instance.py``, the entry point). This module wires the stages and is the
port each of them sees.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Iterator

from ..api import Bolt, Reliability, RuntimeConfig, Spout, SystemComponent, Topology
from ..plan import PhysicalPlan, task_ids
from ..plan._routing import Router
from ..state import StatefulComponent
from ..wire._control import ControlMessage, Hello, control_frame
from ..wire._frame import Frame
from ._context import InstanceContext
from ._emitter import Emitter
from ._executor import Executor, run_bolt, run_spout
from ._gateway import Gateway
from ._hot_keys import keyed_inputs
from ._input_gate import InputGate
from ._instance_control import on_control
from ._instance_metrics import report_metrics
from ._outputs import Outputs, TaskCounters
from ._queues import ByteQueue
from ._revision import Revision, downstream_of, sources_of
from ._sites import site_table
from ._task_state import TaskState

log = logging.getLogger("headwater.instance")


class Instance:
    """One task's process: its component and the stages around it.

    ``run`` on the main thread (the executor); the gateway thread does the I/O.
    """

    def __init__(
        self, topology: Topology, task: int, sock: socket.socket, plan: PhysicalPlan | None = None
    ) -> None:
        self.topology = topology
        self.task = task
        self.ids = plan.ids() if plan is not None else task_ids(topology)
        task_component = {t: c for c, ts in self.ids.items() for t in ts}
        self.component = component = task_component[task]
        self.index = self.ids[component].index(task)
        self.conf = topology.merged_config(component)
        self.rc = rc = RuntimeConfig.from_mapping(self.conf)
        # snapshots come with checkpoint barriers, which only an exactly-once topology has
        # (the topology's own mode, as the stmgr and the master read it: not a component's)
        mode = RuntimeConfig.from_mapping(topology.config).reliability
        self.store = TaskState(tracked=mode is Reliability.EXACTLY_ONCE)
        self.gate: InputGate[Revision] = InputGate(
            self,
            task,
            sources_of(topology, component, self.ids),
            downstream_of(topology, component, self.ids),
        )
        self.gateway = Gateway(
            sock,
            ByteQueue(rc.instance_high_water, rc.instance_low_water),
            ByteQueue(rc.instance_high_water, rc.instance_low_water),
            deque(maxlen=16),
        )
        self.ctx = InstanceContext(self)
        self.component_obj: Spout | Bolt = topology.component(component).factory()
        comp = self.component_obj
        self.on_system = comp.on_system if isinstance(comp, SystemComponent) else None
        router = Router(topology, component, self.ctx, seed=task * 7919 + os.getpid(), ids=self.ids)
        self.emitter = Emitter(
            router, task, component, self.send, rc.batch_size, rc.batch_linger_ms / 1000.0, log
        )
        self.stopping = False
        self.active = False
        self.counts = TaskCounters()
        self.counts.hot.keyed = keyed_inputs(topology, component)
        self.outputs = Outputs(
            self.emitter,
            task,
            rc.acking,
            isinstance(comp, Spout),
            self.counts,
            rc.record_max_retries,
            self.send,
        )
        self.executor = Executor(comp, component, self.outputs, task_component, self._control)
        self.executor.sites = site_table(topology, component, self.store, self.ctx.incr)

    # -- main loop ------------------------------------------------------------
    def run(self) -> None:
        self.gateway.start()
        self.send(control_frame(Hello(self.task, os.getpid()), src=self.task))
        exactly_once = self.rc.reliability is Reliability.EXACTLY_ONCE
        early: list[bytes] = []
        if exactly_once:
            early = self.gate.await_restore(self._frames())
        comp = self.component_obj
        if isinstance(comp, StatefulComponent):
            comp.init_state(self.store.state)
        comp.open(self.ctx)
        if exactly_once:
            comp.on_restore(self.store.restored_from)
        for raw in early:
            self.gate.handle(raw)
        try:
            if isinstance(comp, Spout):
                run_spout(self, comp)
            else:
                run_bolt(self, comp)
        finally:
            self.emitter.flush_all()
            report_metrics(self)
        comp.close()

    def _frames(self) -> Iterator[bytes]:
        """The inbox's frames, until the stmgr went away or the instance stops."""
        inbox, eof = self.gateway.inbox, self.gateway.eof
        while True:
            raw = inbox.get(timeout=0.5)
            if raw is not None:
                yield raw
            elif eof.is_set() or self.stopping:
                return

    def _control(self, msg: ControlMessage) -> None:
        on_control(self, msg, self.component_obj)

    # -- the input gate's port ------------------------------------------------
    def send(self, frame: bytes) -> None:
        self.gateway.send(frame)

    def process(self, frame: Frame) -> None:
        self.executor.process(frame)

    def snapshot(self, checkpoint: int) -> bytes:
        comp = self.component_obj
        if isinstance(comp, StatefulComponent):
            comp.pre_save(checkpoint)
        comp.on_checkpoint(checkpoint)
        blob = self.store.dump(checkpoint)
        # everything emitted before the barrier leaves before the markers
        self.emitter.flush_all()
        return blob

    def restore(self, checkpoint: int, blob: bytes | None) -> None:
        self.store.restore(checkpoint, blob)

    def switch_to(self, revision: Revision) -> None:
        """Route with a staged revision from now on (right after its switch checkpoint)."""
        self.topology, self.ids = revision.topology, revision.ids
        self.emitter.switch(revision.router)
        self.executor.task_component = {t: c for c, ts in revision.ids.items() for t in ts}
        self.counts.hot.keyed = keyed_inputs(revision.topology, self.component)
        self.executor.sites = site_table(
            revision.topology, self.component, self.store, self.ctx.incr
        )

    def retire(self) -> None:
        self.emitter.flush_all()
        # a retired receiver takes no more agents' batches (a hand-over bolt, which goes on
        # while it drains, would emit them past its last checkpoint): its successor, restored
        # from that checkpoint, takes them when the agents resend after its resync
        self.executor.on_uplink = None
