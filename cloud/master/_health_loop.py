"""Self-regulation in the master: each topology's health manager fed samples, its actions applied.

Every ``interval`` seconds (``--health-interval``, 5 s by default), for each running topology
whose policy is not ``off``: a ``Sample`` is built from its topology master's metrics view,
what the agents running its edge subgraph report (``agents``) and the running revision's
whole topology (``_health_sample.py``; none while an edit is being applied: its new tasks are
starting), handed to its decider's
``tick``, and each action it returns is applied: a ``rescale`` as a live edit (a replace with
the new parallelism, author ``health-manager``, the action's reason kept on the revision), a
``restart`` as a ``RestartTasks`` command to the topology's containers (each kills those of
its instances, which are then restarted, or rolled back, as any lost instance), a ``report``
changes nothing. What became of each action goes back to the decider (``applied``: the
revision its edit made, or why it failed), and before each tick, and when a decider is made,
the revisions its edits made (author ``health-manager``) with their status in the revision
history (``settle``): a rescale's outcome is its revision's (applied, rolled back, refused),
not the edit's proposal.

A decider keeps its state in health/TOPOLOGY.json of the master's state, so a restarted
master repeats no action: one it recorded and then stopped on is settled from the revision
history when its decider is made again (its revision's outcome, or never applied if it made
none); a policy an operator set (``PUT .../health/policy``) is kept beside it
(TOPOLOGY.policy.json) over the topology config's ``headwater.health.*``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from headwater.common._exceptions import HeadwaterError
from headwater.common.api import Topology
from headwater.common.control import TopologyMaster
from headwater.common.control._revisions import without
from headwater.common.control._views import metrics
from headwater.common.health import JsonFileStore
from headwater.common.health._model import Action, Mode, RevisionOutcome
from headwater.common.statemgr import Record, StateManager
from headwater.common.wire._states import RevisionStatus
from headwater.common.wire.proto import runtime_pb2 as pb

from ._health_parts import (
    HEALTH_INTERVAL_S,
    HealthDecider,
    make_decider,
    policy_from_config,
    policy_from_json,
    policy_to_json,
)
from ._health_sample import AgentReport, build_sample

log = logging.getLogger("headwater.master")
AUTHOR = "health-manager"


class EditPort(Protocol):
    """``Master.edit`` as the loop calls it."""

    def __call__(
        self,
        name: str,
        action: str,
        base: int,
        *,
        author: str,
        parallelism: dict[str, int],
        reason: str,
    ) -> Awaitable[dict[str, Any]]: ...


Described = Callable[[str, str], Topology | None]
Agents = Callable[[str], Mapping[str, AgentReport]]
"""What the online agents running a topology's edge subgraph report, by agent id."""
MakeDecider = Callable[[str, Any, JsonFileStore], HealthDecider]


class HealthLoop:
    """The health managers of the master's topologies, and the loop that feeds them."""

    def __init__(
        self,
        tms: Mapping[str, TopologyMaster],
        described: Described,
        edit: EditPort,
        state: StateManager,
        *,
        interval: float = HEALTH_INTERVAL_S,
        make: MakeDecider = make_decider,
        clock: Callable[[], float] = time.monotonic,
        agents: Agents = lambda topology: {},
    ) -> None:
        self.tms = tms
        self.agents = agents
        self.described = described
        self.edit = edit
        self.state = state  # the master's state seen under health/
        self.interval = interval
        self.make = make
        self.clock = clock
        self.deciders: dict[str, HealthDecider] = {}
        self._applying: set[str] = set()  # the topologies whose actions are being applied

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.tick_all()

    async def tick_all(self) -> None:
        for name in sorted(set(self.deciders) - set(self.tms)):  # killed since: forgotten
            del self.deciders[name]
            for path in (f"{name}.json", self._policy_path(name)):
                self.state.delete(path)
        for name in sorted(self.tms):
            try:
                await self.tick(name)
            except Exception:  # one topology's failure stops no other's
                log.exception("health manager of %s failed", name)

    # -- one topology ---------------------------------------------------------------
    def _whole(self, tm: TopologyMaster) -> Topology | None:
        rec = tm.revisions[tm.current].record
        whole = self.described(rec.package, rec.entry)
        return None if whole is None else without(whole, rec.exclude)

    def decider(self, name: str) -> HealthDecider:
        """The health manager of ``name`` (made at its first use); HeadwaterError if no
        topology of that name runs."""
        tm = self.tms.get(name)
        if tm is None:
            known = ", ".join(sorted(self.tms)) or "none"
            raise HeadwaterError(f"no topology named {name!r} (running: {known})")
        found = self.deciders.get(name)
        if found is None:
            whole = self._whole(tm)
            try:
                policy = policy_from_config(whole.config if whole is not None else {})
            except ValueError as exc:
                log.warning("%s: its health policy is not valid (%s): mode off", name, exc)
                policy = policy_from_config({})
            saved = JsonFileStore(Record(self.state, self._policy_path(name))).load()
            if saved is not None:
                try:
                    policy = policy_from_json(saved, policy)
                except ValueError as exc:
                    where = self.state.describe(self._policy_path(name))
                    log.warning("%s: %s is not valid (%s): not used", name, where, exc)
            store = JsonFileStore(Record(self.state, f"{name}.json"))
            found = self.deciders[name] = self.make(name, policy, store)
            self._settle(name, tm, found)  # what became of an action the master stopped on
        return found

    def _settle(self, name: str, tm: TopologyMaster, decider: HealthDecider) -> None:
        """The decider's pending actions settled by the revisions its edits made (not while
        its actions are being applied: one whose edit is being made has no revision yet)."""
        if name in self._applying:
            return
        decider.settle(
            [
                RevisionOutcome(r.revision, r.reason, r.time, r.status.value, r.error)
                for r in tm.revlog.records
                if r.author == AUTHOR
            ]
        )

    def _policy_path(self, name: str) -> str:
        return f"{name}.policy.json"

    def report(self, name: str) -> dict[str, Any]:
        """What ``GET .../health`` shows: the decider's report, with its policy."""
        decider = self.decider(name)
        self._settle(name, self.tms[name], decider)  # the outcomes as the history has them now
        return {**decider.report().to_json(), "policy": policy_to_json(decider.policy)}

    def set_policy(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Change ``name``'s policy live (``body``: policy fields); ValueError for a bad one,
        HeadwaterError for an unknown topology. The policy is kept over restarts."""
        decider = self.decider(name)
        policy = policy_from_json(body, decider.policy)
        shown = policy_to_json(policy)
        JsonFileStore(Record(self.state, self._policy_path(name))).save(shown)
        decider.set_policy(policy)
        log.info("%s: health policy set: %s", name, shown)
        return shown

    async def tick(self, name: str) -> list[tuple[Action, int | None, str | None]]:
        """One sample of ``name`` to its decider, and its actions applied: each with the
        revision it made and the error that stopped it."""
        tm = self.tms.get(name)
        if tm is None:
            return []
        decider = self.decider(name)
        self._settle(name, tm, decider)
        whole = self._whole(tm)
        if decider.policy.mode is Mode.OFF or whole is None:
            return []
        if any(r.status is RevisionStatus.APPLYING for r in tm.revlog.records):
            return []  # an edit under way: its new tasks start, their rates mean nothing yet
        view, agents = metrics(tm), self.agents(name)
        sample = build_sample(name, tm.current, self.clock(), view, whole, agents)
        done = []
        self._applying.add(name)
        try:
            for action in decider.tick(sample):  # each saved as pending before it is returned
                revision, error = await self._apply(name, tm, action)
                decider.applied(action, revision, error)
                done.append((action, revision, error))
        finally:
            self._applying.discard(name)
        return done

    async def _apply(
        self, name: str, tm: TopologyMaster, action: Action
    ) -> tuple[int | None, str | None]:
        try:
            if action.kind == "rescale" and action.parallelism is not None:
                record = await self.edit(
                    name,
                    "replace",
                    tm.current,
                    author=AUTHOR,
                    parallelism={action.component: action.parallelism},
                    reason=action.reason,
                )
                log.info("%s: %s rescaled: %s", name, action.component, action.reason)
                return int(record["revision"]), None
            if action.kind == "restart" and action.tasks:
                restart = pb.RestartTasks(tasks=action.tasks, reason=action.reason)
                tm.broadcast(pb.Command(restart_tasks=restart))
                log.info("%s: tasks %s restarted: %s", name, list(action.tasks), action.reason)
            return None, None
        except HeadwaterError as exc:
            log.warning("%s: %s of %s failed: %s", name, action.kind, action.component, exc)
            return None, str(exc)
