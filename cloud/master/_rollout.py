"""Model rollouts: a registry version goes live on a running topology's component, canary
first, then in waves, judged by guards.

A rollout is the live ``replace`` edit the master already makes (state
carried), with a package it builds itself: the current revision's package
plus ``headwater_models.json`` and ``models/<sha256>.json`` (``.onnx``)
beside the topology file (``package_with``; ``common/plan/_package_models.py``
says how the component picks its version by its agent's labels and id). Its
phases (``Phase``), each stamped with its time in ``steps``:

- ``requested``: the rollout is accepted (its values, and the model's fit to the
  component, were checked before: ``_rollout_checks.py``);
- ``canary``: the new version on the agents the canary selector picks;
- ``wave``: the new version on a wave's share of the agents, by id;
- ``watching``: after the canary and each wave, for ``watch_s`` seconds, the
  watched agents' counters must stay within the guards (``_rollout_guards.py``);
- ``promoting``: an edit makes the version the default of every agent;
- ``done``: all live; or ``rolling_back`` then ``rolled_back`` (``failed`` if
  even that cannot be done).

``_rollout_drive.py`` drives one (``Driving``, which ``Rollouts`` is);
``_rollout_record.py`` keeps the records (``rollouts.json`` of the state, saved at
each step). A master that restarts during one fails safe: on ``resume`` each
unfinished rollout that made an edit is rolled back (the previous entry
restored), with the restart as its reason; one that made none is marked
``failed``. ``rollback`` (``headwater models rollback``) restores the entry the
latest completed rollout of that component replaced.

Here: the requests (``start``, ``rollback``, ``resume``) and the views.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zipfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError
from headwater.common.api import Placement
from headwater.common.models import ONNX_KIND
from headwater.common.models._rollout_guards import guards_for
from headwater.common.statemgr import Record

from ._model_package import entry_version, models_of
from ._models import ModelRegistry, model_name_problem
from ._rollout_checks import check_fit, check_values, output_range
from ._rollout_drive import Driving, RolloutHost
from ._rollout_record import FINAL, Phase, Rollout, RolloutError, load_records, save_records
from ._rollout_watch import AgentWatch

__all__ = ["FINAL", "Phase", "Rollout", "RolloutError", "Rollouts"]
log = logging.getLogger("headwater.master.rollout")
LIVE_TIMEOUT_S = 120.0
"""How long agents may take to run a new version before the rollout gives up on it."""


class Rollouts(Driving):
    """Every rollout of the master, and the tasks driving the unfinished ones.

    Event-loop thread only; ``start`` and ``rollback`` create a task on the running loop.
    ``sleep`` and ``clock`` are injectable (tests)."""

    def __init__(
        self,
        master: RolloutHost,
        registry: ModelRegistry,
        path: Path | Record,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        live_timeout_s: float = LIVE_TIMEOUT_S,
    ) -> None:
        self.master, self.registry, self.path = master, registry, path
        self.sleep, self.clock, self.live_timeout_s = sleep, clock, live_timeout_s
        self.records: list[Rollout] = load_records(path)
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self.watch = AgentWatch(
            master.nodes, master.deployments, self._placement, master.agent_revisions
        )

    def _save(self) -> None:
        save_records(self.path, self.records)

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
        waves: Sequence[float] = (100.0,),
        guards: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Accept a rollout and start driving it; RolloutError if it cannot be made (every
        check is made before any edit)."""
        problem = model_name_problem(model)
        if problem is not None:
            raise RolloutError(problem)
        meta = self.registry.meta(model, version)  # an unknown one: UnknownModelError, a 404
        check_values(watch_s, max_anomaly_rate, max_errors, list(waves))
        kind = str(meta.get("kind") or "")
        try:
            guard_list = guards_for(list(guards), kind != ONNX_KIND, max_anomaly_rate, max_errors)
        except ValueError as exc:
            raise RolloutError(str(exc)) from None
        self._check_target(topology, component)
        scoring = check_fit(model, version, meta, component, self._config(topology, component))
        output_range(meta)  # a malformed one is refused now, not at the edit
        if canary is not None:
            if not canary:
                raise RolloutError("a canary selector names at least one label: site=site0")
            if not self.watch.agents(topology, component, canary):
                raise RolloutError(
                    f"no agent running {topology!r} matches the canary selector {canary}", 409
                )
        running = (self.current_entry(topology, component) or {}).get("name")
        if (canary is not None or len(waves) > 1) and running and running != model:
            raise RolloutError(
                f"{topology}/{component} runs model {running!r}: a canary or wave of {model!r} "
                f"would leave {running!r} as the default beside it; roll {model!r} out without "
                "--canary and --waves, or a version of the model it runs",
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
            waves=[float(w) for w in waves],
            guards=guard_list,
            must_grow="scored" if scoring else "",
            model_kind=kind,
        )
        r.previous = self.current_entry(topology, component)
        self.records.append(r)
        said = f"v{version}" + (f" canary {canary}" if canary else "")
        if len(waves) > 1:
            said += " waves " + ",".join(f"{w:g}%" for w in waves)
        self._step(r, Phase.REQUESTED, f"{said}; guards {', '.join(guard_list)}")
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

    # -- where the component runs --------------------------------------------------
    def _config(self, topology: str, component: str) -> dict[str, Any] | None:
        """``component``'s config in the current revision (None: not known here)."""
        whole = self.master.described(*self._current(topology)[:2])
        found = [c.config for c in whole.components if c.name == component] if whole else []
        return dict(found[0]) if found else None

    def _placement(self, topology: str, component: str) -> Placement | None:
        """Where ``component`` runs in the current revision (None: not known here, or
        the topology is not running)."""
        if topology not in self.master.tms:
            return None
        whole = self.master.described(*self._current(topology)[:2])
        found = [c.placement for c in whole.components if c.name == component] if whole else []
        return found[0] if found else None

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
                                "selector": entry["canary"].get("selector"),
                                "agents": entry["canary"].get("agents"),
                                "version": entry["canary"]["version"],
                            }
                            if entry.get("canary")
                            else None
                        ),
                        "agents": agents,
                    }
                )
        return out
