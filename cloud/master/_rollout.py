"""Model rollouts: a registry version goes live on a running topology's component, canary first.

A rollout is the live ``replace`` edit the master already makes (state
carried), with a package it builds itself: the current revision's package
plus ``headwater_models.json`` and ``models/<sha256>.json`` beside the
topology file (``package_with``; ``common/plan/_package_models.py`` says how
the component picks its version by its agent's labels). Its phases
(``Phase``), each stamped with its time in ``steps``:

- ``requested``: the rollout is accepted;
- ``canary``: edit 1 made: the new version on the agents the canary selector
  picks, the previous one elsewhere; it waits until every canary agent
  reports the version running (``model:T/C`` in its status, see
  ``edge/_component_status.py``);
- ``watching``: for ``watch_s`` seconds the canary's anomaly rate
  (``anomalies``/``scored``, the component's counters) and error count
  (exceptions and dead letters) must stay within bounds;
- ``promoting``: edit 2 makes the version the default of every agent; it waits
  until every online agent runs it;
- ``done``: all live.

Without a canary the version goes to every agent at once, then is watched on
all of them. A canary that does not go live (a model that raises on load: its
replace rolls back on the agent, which reports ``revision_failed:T``), an edit
the master refuses, or figures out of bounds send it to ``rolling_back``: an
edit restores the entry that was live before, and ``rolled_back`` once every
online agent runs it again (``failed`` if even that cannot be done).
``rollback`` (``headwater models rollback``) is the same edit for the entry
the latest completed rollout of that component replaced.

Rollouts are kept in ``STATE/rollouts.json``, saved at each step. A master
that restarts during one fails safe: on ``resume`` each unfinished rollout that
made an edit is rolled back (the previous entry restored), with the restart
as its reason; one that made none is marked ``failed``.

Here: the records (``Rollout``, ``Rollouts``: kept, resumed, viewed) and the
edits that drive them. The package an edit sends is ``_model_package.py``'s;
which agents are waited for and watched, and what they report, is
``_rollout_watch.py``'s (``AgentWatch``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zipfile
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.common._exceptions import HeadwaterError
from headwater.common._package import check_package
from headwater.common.api import Placement
from headwater.common.control._revisions import StaleRevisionError
from headwater.common.models import ONNX_KIND

from ._model_package import entry_version, models_of, package_with
from ._models import ModelRegistry, model_name_problem
from ._rollout_watch import POLL_S, AgentWatch

if TYPE_CHECKING:
    from ._master import Master

log = logging.getLogger("headwater.master.rollout")
LIVE_TIMEOUT_S = 120.0
"""How long agents may take to run a new version before the rollout gives up on it."""
MAX_WATCH_S = 86_400.0


class Phase(StrEnum):
    REQUESTED = "requested"
    CANARY = "canary"
    WATCHING = "watching"
    PROMOTING = "promoting"
    DONE = "done"
    ROLLING_BACK = "rolling_back"
    ROLLED_BACK = "rolled_back"
    FAILED = "failed"


FINAL = (Phase.DONE, Phase.ROLLED_BACK, Phase.FAILED)


class RolloutError(HeadwaterError):
    """A rollout request that cannot be made (``status``: the HTTP status to answer)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Rollout:
    id: int
    model: str
    version: int  # 0: a rollback (to ``target``)
    topology: str
    component: str
    canary: dict[str, str] | None = None
    watch_s: float = 30.0
    max_anomaly_rate: float = 0.2
    max_errors: int = 0
    kind: str = "rollout"  # or "rollback"
    phase: Phase = Phase.REQUESTED
    steps: list[dict[str, Any]] = field(default_factory=list)
    previous: dict[str, Any] | None = None  # the component's entry before (restored on failure)
    target: dict[str, Any] | None = None  # what a rollback restores
    edited: bool = False  # an edit was made (so a failure must restore ``previous``)
    figures: dict[str, float] = field(default_factory=dict)
    error: str = ""

    def __post_init__(self) -> None:
        self.phase = Phase(self.phase)

    def view(self) -> dict[str, Any]:
        return asdict(self)


class Rollouts:
    """Every rollout of the master, and the tasks driving the unfinished ones.

    Event-loop thread only; ``start`` and ``rollback`` create a task on the running loop.
    ``sleep`` and ``clock`` are injectable (tests)."""

    def __init__(
        self,
        master: Master,
        registry: ModelRegistry,
        path: Path,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        live_timeout_s: float = LIVE_TIMEOUT_S,
    ) -> None:
        self.master, self.registry, self.path = master, registry, path
        self.sleep, self.clock, self.live_timeout_s = sleep, clock, live_timeout_s
        self.records: list[Rollout] = []
        if path.exists():
            try:
                self.records = [Rollout(**r) for r in json.loads(path.read_text())]
            except (ValueError, TypeError, RecursionError) as exc:  # not what _save wrote
                kept = path.with_suffix(".corrupt")
                path.replace(kept)
                log.error(
                    "%s is not a rollout record (%s): kept as %s; starting with no rollouts",
                    path,
                    exc,
                    kept,
                )
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self.watch = AgentWatch(
            master.nodes, master.deployments, self._placement, master.agent_revisions
        )

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps([r.view() for r in self.records]))
        tmp.replace(self.path)

    def _step(self, r: Rollout, phase: Phase, note: str = "", revision: int = 0) -> None:
        r.phase = phase
        r.steps.append(
            {"phase": phase.value, "at": self.clock(), "note": note, "revision": revision}
        )
        self._save()
        log.info(
            "rollout %d (%s %s on %s/%s): %s %s",
            r.id,
            r.model,
            f"v{r.version}" if r.version else r.kind,
            r.topology,
            r.component,
            phase.value,
            note,
        )

    def of(self, model: str) -> list[dict[str, Any]]:
        return [r.view() for r in self.records if r.model == model]

    # -- requests -----------------------------------------------------------------
    def _check_target(self, topology: str, component: str) -> None:
        tm = self.master.tms.get(topology)
        if tm is None:
            raise RolloutError(f"no topology named {topology!r} is running", 404)
        whole = self.master.described(*self._current(topology)[:2])
        names = {c.name for c in whole.components} if whole is not None else set()
        if whole is not None and component not in names:
            raise RolloutError(f"topology {topology!r} has no component {component!r}", 404)
        placement = self._placement(topology, component)
        if placement is not None and not placement.is_edge:
            raise RolloutError(
                f"component {component!r} of {topology!r} runs in the cloud: a model rolls "
                "out to a component placed on the edge"
            )
        busy = next(
            (r for r in self.records if r.topology == topology and r.phase not in FINAL), None
        )
        if busy is not None:
            raise RolloutError(
                f"rollout {busy.id} of {topology!r} is still under way ({busy.phase.value}); "
                "wait for it",
                409,
            )

    def _current(self, topology: str) -> tuple[str, str, int]:
        tm = self.master.tms.get(topology)
        if tm is None:  # killed meanwhile: a reason, not a KeyError
            raise HeadwaterError(f"topology {topology!r} was killed")
        rec = tm.revlog.find(tm.current)
        assert rec is not None
        return rec.package, rec.entry, tm.current

    def current_entry(self, topology: str, component: str) -> dict[str, Any] | None:
        package, entry, _ = self._current(topology)
        got = models_of(self.master.packages.get(package), entry).get(component)
        return dict(got) if got else None

    def start(
        self,
        model: str,
        version: int,
        topology: str,
        component: str,
        canary: dict[str, str] | None = None,
        watch_s: float = 30.0,
        max_anomaly_rate: float = 0.2,
        max_errors: int = 0,
    ) -> dict[str, Any]:
        """Accept a rollout and start driving it; RolloutError if it cannot be made."""
        problem = model_name_problem(model)
        if problem is not None:
            raise RolloutError(problem)
        if self.registry.meta(model, version).get("kind") == ONNX_KIND:  # unknown: a 404
            raise RolloutError(
                f"{model} v{version} is an ONNX model: rollout of onnx models: not yet (the "
                "edge scores the JSON anomaly kind only)",
                409,
            )
        if not 0 <= watch_s <= MAX_WATCH_S:
            raise RolloutError(f"watch must be from 0 to {MAX_WATCH_S:.0f} seconds")
        if not 0.0 <= max_anomaly_rate <= 1.0:
            raise RolloutError("max_anomaly_rate must be from 0 to 1")
        if max_errors < 0:
            raise RolloutError("max_errors must be 0 or more")
        self._check_target(topology, component)
        if canary is not None:
            if not canary:
                raise RolloutError("a canary selector names at least one label: site=site0")
            if not self.watch.agents(topology, component, canary):
                raise RolloutError(
                    f"no agent running {topology!r} matches the canary selector {canary}", 409
                )
        running = (self.current_entry(topology, component) or {}).get("name")
        if canary is not None and running and running != model:
            raise RolloutError(
                f"{topology}/{component} runs model {running!r}: a canary of {model!r} would "
                f"leave {running!r} as the default beside it; roll {model!r} out without "
                "--canary, or a version of the model it runs",
                409,
            )
        r = Rollout(
            len(self.records) + 1,
            model,
            version,
            topology,
            component,
            canary,
            float(watch_s),
            float(max_anomaly_rate),
            int(max_errors),
        )
        r.previous = self.current_entry(topology, component)
        self.records.append(r)
        self._step(r, Phase.REQUESTED, f"v{version}" + (f" canary {canary}" if canary else ""))
        self._run(r, self._rollout(r))
        return r.view()

    def rollback(self, model: str, topology: str, component: str) -> dict[str, Any]:
        """Restore the entry the latest completed rollout of ``component`` replaced."""
        problem = model_name_problem(model)
        if problem is not None:
            raise RolloutError(problem)
        self._check_target(topology, component)
        stack: list[dict[str, Any] | None] = []
        for r in self.records:
            if (r.topology, r.component) != (topology, component) or r.phase is not Phase.DONE:
                continue
            if r.kind == "rollout":
                stack.append(r.previous)
            elif stack:
                stack.pop()
        if not stack:
            raise RolloutError(f"no completed rollout of {topology}/{component} to roll back", 409)
        current = self.current_entry(topology, component)
        if current is None or current.get("name") != model:
            raise RolloutError(f"{topology}/{component} does not run model {model!r}", 409)
        target = stack[-1] or {"name": model, "default": None, "canary": None}
        r = Rollout(len(self.records) + 1, model, 0, topology, component, kind="rollback")
        r.previous, r.target = current, target
        self.records.append(r)
        self._step(r, Phase.REQUESTED, f"back to v{entry_version(target)}")
        self._run(r, self._rollback(r))
        return r.view()

    def resume(self) -> None:
        """After a restart: roll back each unfinished rollout that made an edit (fail safe)."""
        for r in self.records:
            if r.phase in FINAL:
                continue
            if not r.edited or r.topology not in self.master.tms:
                r.error = "the master restarted during the rollout, before any edit"
                self._step(r, Phase.FAILED, r.error)
                continue
            r.error = "the master restarted during the rollout"
            self._run(r, self._undo(r, r.error))

    def _run(self, r: Rollout, work: Awaitable[None]) -> None:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never leave a rollout hanging: say why it stopped
                log.exception("rollout %d failed", r.id)
                r.error = r.error or f"{type(exc).__name__}: {exc}"
                self._step(r, Phase.FAILED, r.error)
            finally:
                self._tasks.pop(r.id, None)

        self._tasks[r.id] = asyncio.get_running_loop().create_task(guarded())

    # -- driving one ----------------------------------------------------------------
    async def _rollout(self, r: Rollout) -> None:
        meta = self.registry.meta(r.model, r.version)
        new = {"version": r.version, "sha256": meta["sha256"]}
        artifacts = {meta["sha256"]: self.registry.artifact(r.model, r.version)}
        if r.canary:
            entry = {  # elsewhere what ran before goes on running
                "name": r.model,
                "default": (r.previous or {}).get("default"),
                "canary": {"selector": r.canary, **new},
            }
            watched = self.watch.agents(r.topology, r.component, r.canary)
            if not await self._edit_and_wait(r, entry, artifacts, Phase.CANARY, watched):
                return
            if not await self._watch(r, watched):
                return
        entry = {"name": r.model, "default": new, "canary": None}
        everyone = self.watch.agents(r.topology, r.component, None)
        if not await self._edit_and_wait(r, entry, artifacts, Phase.PROMOTING, everyone):
            return
        if not r.canary and not await self._watch(r, everyone):
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
        undoing: bool = False,
    ) -> bool:
        """Make the replace edit for ``entry`` and wait until ``agents`` run what it gives
        them; on failure roll back (or, ``undoing``, mark the rollout failed)."""
        try:
            revision = await self._edit(r, entry, artifacts)
        except HeadwaterError as exc:
            return await self._failed(r, f"the edit was refused: {exc}", undoing)
        r.edited = True
        self._step(r, phase, "edit made", revision)
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
            Phase.PROMOTING: "all live",
            Phase.ROLLING_BACK: "previous version live",
        }.get(phase, "live")
        r.steps.append(
            {"phase": phase.value, "at": self.clock(), "note": note, "revision": revision}
        )
        self._save()
        log.info("rollout %d: %s (%s)", r.id, note, ", ".join(agents))
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

    # -- where the component runs --------------------------------------------------
    def _placement(self, topology: str, component: str) -> Placement | None:
        """Where ``component`` runs in the current revision (None: not known here, or
        the topology is not running)."""
        if topology not in self.master.tms:
            return None
        whole = self.master.described(*self._current(topology)[:2])
        found = [c.placement for c in whole.components if c.name == component] if whole else []
        return found[0] if found else None

    def _trouble(self, r: Rollout, revision: int, agents: list[str]) -> str:
        tm = self.master.tms.get(r.topology)
        if tm is None:
            return f"topology {r.topology!r} was killed"
        rec = tm.revlog.find(revision)
        if rec is not None and rec.status.value in ("refused", "rolled_back"):
            return f"revision {revision} {rec.status.value.replace('_', ' ')}: {rec.error}"
        return self.watch.failed_on(r.topology, revision, agents)

    async def _watch(self, r: Rollout, agents: list[str]) -> bool:
        """Watch ``agents`` for ``watch_s``: anomaly rate and errors within bounds."""
        if r.watch_s <= 0:
            self._step(r, Phase.WATCHING, "not watched (a watch of 0 s)")
            return True
        self._step(r, Phase.WATCHING, f"{r.watch_s:.0f} s on {', '.join(agents)}")
        why = await self.watch.window(r, agents, self.sleep, self.clock)
        if why:
            return await self._failed(r, why, False)
        self._save()
        why = self.watch.verdict(r)
        if why:
            return await self._failed(r, why, False)
        return True

    # -- views --------------------------------------------------------------------------
    def running(self, model: str) -> list[dict[str, Any]]:
        """Which topologies' components run ``model``, and which version each agent runs."""
        out = []
        for name in sorted(self.master.tms):
            package, entry_file, revision = self._current(name)
            try:
                models = models_of(self.master.packages.get(package), entry_file)
            except (KeyError, HeadwaterError, zipfile.BadZipFile):
                continue
            for component, entry in sorted(models.items()):
                if entry.get("name") != model:
                    continue
                agents = {
                    a: int(self.watch.metrics(a)[f"model:{name}/{component}"])
                    for a in self.watch.agents(name, component, None)
                    if f"model:{name}/{component}" in self.watch.metrics(a)
                }
                out.append(
                    {
                        "topology": name,
                        "component": component,
                        "revision": revision,
                        "default": entry_version(entry),
                        "canary": (
                            {
                                "selector": entry["canary"]["selector"],
                                "version": entry["canary"]["version"],
                            }
                            if entry.get("canary")
                            else None
                        ),
                        "agents": agents,
                    }
                )
        return out
