"""A keyed move's state to the edge, gathered by the cloud's topology master (issue 37).

At an agent's fence every task of the moved component's cloud copy gives up that site's
keys; each container sends its tasks' parts once the checkpoint holding them commits
(``PutState`` with the site, ``runtime/_move_outgoing.py``). ``SiteStates`` gathers them per
(component, site, revision) and, once every task of the component has sent its part,
hands the whole to ``ready`` (the master sends it to the site's agent). A part sent again
(a container that restored, a resend) changes nothing; a gathered site is kept, so the
master can send it again to an agent that was away (``gathered``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..wire.proto import runtime_pb2 as pb

log = logging.getLogger("headwater.tmaster")


class SiteStates:
    def __init__(self, topology: str, tasks: Callable[[str], list[int]]) -> None:
        self.topology = topology
        self.tasks = tasks  # a component's task ids in the running plan
        self.parts: dict[tuple[str, str, int], dict[int, bytes]] = {}
        self.gathered: dict[tuple[str, str], pb.MoveState] = {}  # (component, site) -> newest
        self.ready: Callable[[pb.MoveState], None] | None = None  # set by the master

    def put(self, r: pb.StateTransfer) -> None:
        done = self.gathered.get((r.component, r.site))
        if done is not None and done.revision >= r.revision:
            return
        key = (r.component, r.site, r.revision)
        parts = self.parts.setdefault(key, {})
        parts[r.task_id] = r.blob
        tasks = self.tasks(r.component)
        if not tasks or not set(tasks) <= set(parts):
            return
        del self.parts[key]
        msg = pb.MoveState(
            topology=self.topology,
            revision=r.revision,
            component=r.component,
            site=r.site,
            parts=[parts[t] for t in sorted(tasks)],
        )
        self.gathered[r.component, r.site] = msg
        log.info(
            "revision %d: %s's keys of site %r gathered from %d tasks",
            r.revision,
            r.component,
            r.site,
            len(tasks),
        )
        if self.ready is not None:
            self.ready(msg)
