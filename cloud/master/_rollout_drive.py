"""The driving of one model rollout: its edits, the waits for agents, the watches.

``Driving`` is the half of ``Rollouts`` (``_rollout.py``) that runs an accepted
rollout to its end on the event loop:

- ``canary`` (when asked): an edit puts the version on the agents the canary
  selector picks (the previous default elsewhere), waits until they run it,
  then watches them;
- each wave but the last (``_rollout_waves.plan_waves``): an edit puts it on
  the wave's agents by id (the entry's canary ``agents``), waits until the
  online ones run it (an offline agent is not waited for), watches them;
- ``promoting``: the last wave, an edit making it everyone's default; it waits
  for every online agent and is watched only when nothing was watched before
  (no canary, one wave: the version went everywhere at once).

A watch (``_watch``) keeps its stage in the record: the agents, each guard's
value over the window and the verdict. A canary or wave that does not go live
(a revision failed on an agent, 120 s passed), an edit the master refuses, or a
guard out of bounds sends the rollout to ``rolling_back`` (``_undo``: an edit
restores the entry that was live before), ``rolled_back`` once every online
agent runs it again; agents offline meanwhile converge when they return, since
an agent syncs to the topology's newest revision when it reconnects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from headwater.common._exceptions import HeadwaterError
from headwater.common._package import PackageStore, check_package
from headwater.common.api import Topology
from headwater.common.control import TopologyMaster
from headwater.common.control._revisions import StaleRevisionError
from headwater.common.models._rollout_guards import judge
from headwater.common.models._rollout_waves import order_agents, plan_waves

from ._model_package import entry_version, package_with
from ._models import ModelRegistry
from ._nodes import Nodes
from ._rollout_record import Phase, Rollout
from ._rollout_watch import POLL_S, AgentWatch, Deployed

log = logging.getLogger("headwater.master.rollout")


class RolloutHost(Protocol):
    """What rollouts ask of the master (``Master`` is one): its topology masters, the kept
    skeletons and packages, the replace edit, and for the watch its node registry,
    deployments and the revisions agents report."""

    @property
    def tms(self) -> Mapping[str, TopologyMaster]: ...

    @property
    def packages(self) -> PackageStore: ...

    @property
    def nodes(self) -> Nodes: ...

    @property
    def deployments(self) -> Mapping[str, Deployed]: ...

    def described(self, package: str, entry: str) -> Topology | None: ...

    def agent_revisions(self, name: str) -> dict[str, int]: ...

    async def edit(
        self,
        name: str,
        action: str,
        base: int,
        data: bytes | None = None,
        entry: str | None = None,
        components: list[str] | None = None,
        author: str = "",
        to: int | None = None,
        parallelism: dict[str, int] | None = None,
    ) -> dict[str, Any]: ...


class Driving:
    """Runs rollouts (``Rollouts`` is one): the attributes and methods below the ``#``
    line are the rollouts'."""

    master: RolloutHost
    registry: ModelRegistry
    watch: AgentWatch
    sleep: Callable[[float], Awaitable[None]]
    clock: Callable[[], float]
    live_timeout_s: float

    def _save(self) -> None:
        raise NotImplementedError

    def _step(self, r: Rollout, phase: Phase, note: str = "", revision: int = 0) -> None:
        raise NotImplementedError

    def _current(self, topology: str) -> tuple[str, str, int]:
        raise NotImplementedError

    # ------------------------------------------------------------------------------------
    async def _new_pick(self, r: Rollout) -> tuple[dict[str, Any], dict[str, bytes]]:
        """The entry's pick for ``r``'s version, and its artifact by SHA-256."""
        meta = self.registry.meta(r.model, r.version)
        new: dict[str, Any] = {"version": r.version, "sha256": meta["sha256"]}
        if meta.get("kind"):
            new["kind"] = meta["kind"]
        user = meta.get("metadata")
        if isinstance(user, dict) and isinstance(user.get("output_range"), list):
            new["range"] = [float(b) for b in user["output_range"]]
        return new, {meta["sha256"]: await self.registry.artifact(r.model, r.version)}

    async def _rollout(self, r: Rollout) -> None:
        new, artifacts = await self._new_pick(r)
        before = (r.previous or {}).get("default")  # elsewhere what ran before goes on running
        watched = False
        first: list[str] = []
        if r.canary:
            entry = {"name": r.model, "default": before, "canary": {"selector": r.canary, **new}}
            first = self.watch.agents(r.topology, r.component, r.canary)
            if not await self._edit_and_wait(r, entry, artifacts, Phase.CANARY, first):
                return
            if not await self._watch(r, first, "canary"):
                return
            watched = True
        everyone = self.watch.agents(r.topology, r.component, None)
        online = [a for a in everyone if self.watch.online(a)]
        waves = plan_waves(r.waves, order_agents(everyone, first, online), len(first))
        for n, (percent, agents) in enumerate(waves[:-1], 1):
            label = f"wave {n} ({percent:g}%)"
            entry = {"name": r.model, "default": before, "canary": {"agents": agents, **new}}
            if not await self._edit_and_wait(r, entry, artifacts, Phase.WAVE, agents, label):
                return
            if not await self._watch(r, agents, label):
                return
            watched = True
        entry = {"name": r.model, "default": new, "canary": None}
        everyone = self.watch.agents(r.topology, r.component, None)
        if not await self._edit_and_wait(r, entry, artifacts, Phase.PROMOTING, everyone):
            return
        if not watched and not await self._watch(r, everyone, "all (100%)"):
            return
        self._step(r, Phase.DONE, "all live")

    async def _rollback(self, r: Rollout) -> None:
        assert r.target is not None
        if await self._edit_and_wait(
            r, r.target, {}, Phase.ROLLING_BACK, self.watch.agents(r.topology, r.component, None)
        ):
            self._step(r, Phase.DONE, f"v{entry_version(r.target)} live on every agent")

    async def _undo(self, r: Rollout, why: str) -> None:
        r.error = why
        target = r.previous or {"name": r.model, "default": None, "canary": None}
        r.target = target
        if r.topology not in self.master.tms:
            self._step(r, Phase.FAILED, f"{why}; the topology is gone")
            return
        ok = await self._edit_and_wait(
            r,
            target,
            {},
            Phase.ROLLING_BACK,
            self.watch.agents(r.topology, r.component, None),
            undoing=True,
        )
        if ok:
            self._step(r, Phase.ROLLED_BACK, f"v{entry_version(target)} live again")

    async def _edit_and_wait(
        self,
        r: Rollout,
        entry: dict[str, Any],
        artifacts: dict[str, bytes],
        phase: Phase,
        agents: list[str],
        label: str = "",
        undoing: bool = False,
    ) -> bool:
        """Make the replace edit for ``entry`` and wait until the online ``agents`` run what
        it gives them; on failure roll back (or, ``undoing``, mark the rollout failed)."""
        try:
            revision = await self._edit(r, entry, artifacts)
        except HeadwaterError as exc:
            return await self._failed(r, f"the edit was refused: {exc}", undoing)
        r.edited = True
        said = f"{label}: " if label else ""
        self._step(r, phase, f"{said}edit made", revision)
        deadline = self.clock() + self.live_timeout_s
        while True:
            trouble = self._trouble(r, revision, agents)
            if trouble:
                return await self._failed(r, trouble, undoing)
            waiting = [
                a
                for a in agents
                if not self.watch.runs(a, r.topology, r.component, entry, revision)
                and self.watch.online(a)
            ]
            if not waiting:
                break
            if self.clock() > deadline:
                return await self._failed(
                    r,
                    f"{', '.join(waiting)} did not run it within {self.live_timeout_s:.0f} s",
                    undoing,
                )
            await self.sleep(POLL_S)
        note = {
            Phase.CANARY: "canary live",
            Phase.WAVE: "wave live",
            Phase.PROMOTING: "all live",
            Phase.ROLLING_BACK: "previous version live",
        }.get(phase, "live")
        r.steps.append(
            {"phase": phase.value, "at": self.clock(), "note": said + note, "revision": revision}
        )
        self._save()
        log.info("rollout %d: %s%s (%s)", r.id, said, note, ", ".join(agents))
        return True

    async def _failed(self, r: Rollout, why: str, undoing: bool) -> bool:
        if undoing:
            r.error = f"{r.error}; the rollback failed too: {why}"
            self._step(r, Phase.FAILED, why)
        elif r.edited:
            await self._undo(r, why)
        else:
            r.error = why
            self._step(r, Phase.FAILED, why)
        return False

    async def _edit(self, r: Rollout, entry: dict[str, Any], artifacts: dict[str, bytes]) -> int:
        """The replace edit that makes ``entry`` the component's; its revision number."""
        for _ in range(5):  # another edit may slip in between reading the base and editing
            deadline = self.clock() + self.live_timeout_s
            while (tm := self.master.tms.get(r.topology)) is not None and tm.edit is not None:
                if self.clock() > deadline:  # the previous edit is still being applied
                    raise HeadwaterError(f"revision {tm.edit.revision} is still being applied")
                await self.sleep(POLL_S)
            package, entry_file, base = self._current(r.topology)
            data = package_with(
                self.master.packages.get(package), entry_file, r.component, entry, artifacts
            )
            check_package(data)
            try:
                record = await self.master.edit(
                    r.topology,
                    "replace",
                    base,
                    data,
                    entry_file,
                    [r.component],
                    f"models {r.kind} {r.model} #{r.id}",
                )
            except StaleRevisionError:
                continue
            return int(record["revision"])
        raise HeadwaterError("the topology kept being edited meanwhile")

    def _trouble(self, r: Rollout, revision: int, agents: list[str]) -> str:
        tm = self.master.tms.get(r.topology)
        if tm is None:
            return f"topology {r.topology!r} was killed"
        rec = tm.revlog.find(revision)
        if rec is not None and rec.status.value in ("refused", "rolled_back"):
            return f"revision {revision} {rec.status.value.replace('_', ' ')}: {rec.error}"
        return self.watch.failed_on(r.topology, revision, agents)

    async def _watch(self, r: Rollout, agents: list[str], label: str) -> bool:
        """Watch the online ``agents`` for ``watch_s`` and judge them by the guards; the
        stage (its agents, each guard's value, the verdict) is kept in ``r.stages``."""
        agents = [a for a in agents if self.watch.online(a)]
        stage: dict[str, Any] = {"stage": label, "agents": agents, "guards": [], "ok": True}
        if r.watch_s <= 0:
            self._step(r, Phase.WATCHING, f"{label}: not watched (a watch of 0 s)")
            r.stages.append({**stage, "verdict": "not watched"})
            self._save()
            return True
        self._step(r, Phase.WATCHING, f"{label}: {r.watch_s:g} s on {', '.join(agents)}")
        early = await self.watch.window(r, agents, self.sleep, self.clock)
        values, why = judge(r.guards, r.figures, r.must_grow)
        why = early or why
        stage.update(guards=values, ok=not why, verdict=why or "within bounds")
        r.stages.append(stage)
        self._save()
        if why:
            return await self._failed(r, f"{label}: {why}", False)
        return True
