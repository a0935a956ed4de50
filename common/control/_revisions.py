"""Topology revisions: what an edit changes, whether it may, and the history.

A revision is a package (the topology file as it now is), the components
left out of it (a removal needs no new file) and the physical plan that goes
with it. ``check_edit`` compares the running topology with the proposed one
and refuses, before anything changes, an edit whose difference is not what
it claims (attach adds components and changes nothing else; replace changes
the named components' code and nothing else; remove takes components away),
a topology that does not validate, and a replacement that cannot read the
state it is handed. ``RevisionLog`` keeps every revision with its content
hash, author, time, diff and outcome.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from headwater.common._exceptions import HeadwaterError, InvalidTopologyError
from headwater.common.api import ComponentSpec, Placement, Topology
from headwater.common.api._config import DSL_STEPS, HANDOVER
from headwater.common.plan import boundary, validate
from headwater.common.plan._description import MIGRATE, STATE_SCHEMA, code_of
from headwater.common.statemgr import Record, as_record
from headwater.common.wire._states import RevisionStatus

from ._moves import move_problem

ACTIONS = ("submit", "attach", "replace", "remove", "rollback", "move")


class EditError(HeadwaterError):
    """An edit that cannot be applied; nothing was changed."""


class StaleRevisionError(EditError):
    """An edit made against a revision that is no longer the current one."""

    def __init__(self, base: int, current: int) -> None:
        super().__init__(
            f"the edit was made against revision {base}, but the topology is at revision "
            f"{current}: look at what changed (`headwater revisions`) and make it again "
            f"against {current}"
        )
        self.current = current


class NotBuiltError(EditError):
    """An edit that checks out but whose switch is not built yet (a move, issue 37)."""


@dataclass(frozen=True)
class Diff:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in asdict(self).items()}

    def __str__(self) -> str:
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("attach", self.added),
                ("replace", self.replaced),
                ("remove", self.removed),
            )
            if names
        ]
        return "; ".join(parts) or "no change"


def without(topology: Topology, names: Iterable[str]) -> Topology:
    gone = set(names)
    return replace(topology, components=tuple(c for c in topology.components if c.name not in gone))


def fingerprint(spec: ComponentSpec) -> str:
    """A hash of what a component is: its shape, config, placement and code (by source)."""
    shape = {
        "kind": spec.kind,
        "parallelism": spec.parallelism,
        "inputs": [[i.component, i.stream, str(i.grouping)] for i in spec.inputs],
        "outputs": [[s.name, list(s.fields)] for s in spec.outputs],
        "config": {k: repr(v) for k, v in sorted(spec.config.items())},
        "placement": [spec.placement.where, sorted(spec.placement.selector.items())],
        "code": code_of(spec.factory),
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


def diff(old: Topology, new: Topology) -> Diff:
    old_names = [c.name for c in old.components]
    new_names = [c.name for c in new.components]
    added = tuple(n for n in new_names if n not in old_names)
    removed = tuple(n for n in old_names if n not in new_names)
    replaced = tuple(
        n
        for n in new_names
        if n in old_names and fingerprint(old.component(n)) != fingerprint(new.component(n))
    )
    return Diff(added, removed, replaced)


def check_edit(action: str, named: Iterable[str], old: Topology, new: Topology) -> Diff:
    """Validate an edit from ``old`` to ``new``; return its diff or raise EditError."""
    named = list(named)
    if action not in ACTIONS:
        raise EditError(
            f"unknown edit {action!r}: use one of attach, replace, remove, rollback, move"
        )
    if action == "move":
        problem = move_problem(old, new, named)
        if problem is not None:
            raise EditError(problem)
    try:
        validate(new)
    except InvalidTopologyError as exc:
        raise EditError(f"the edited topology is not valid: {exc}") from exc
    d = diff(old, new)
    if action == "move":
        return _check_move(named, old, new, d)
    claimed = set(named)
    if action == "attach":
        if d.removed or d.replaced:
            raise EditError(
                f"an attach only adds components, but this edit would also {d}: attach "
                f"a file that keeps every existing component as it is{_fusion_hint(old, new, d)}"
            )
        if not d.added:
            raise EditError("the attach adds no component: the file has nothing new")
        if claimed and claimed != set(d.added):
            raise EditError(
                f"the attach names {sorted(claimed)}, but the file adds {list(d.added)}"
            )
    elif action == "replace":
        if d.added or d.removed:
            raise EditError(
                f"a replace only changes existing components, but this edit would {d}: "
                "use attach or remove for those"
            )
        unknown = claimed - {c.name for c in old.components}
        if unknown:
            raise EditError(f"no component named {sorted(unknown)} to replace")
        changed = set(d.replaced)
        if claimed and not changed <= claimed:
            raise EditError(
                f"the file also changes {sorted(changed - claimed)}, which the replace does "
                "not name: name every component it changes"
            )
        if not claimed and not changed:
            raise EditError("the replacement is the same as the running code: nothing to replace")
        d = Diff(replaced=tuple(n for n in (named or d.replaced)))
    elif action == "remove":
        if d.added or d.replaced:
            raise EditError(f"a remove only takes components away, but this edit would {d}")
        if claimed != set(d.removed):
            raise EditError(f"the remove names {sorted(claimed)} but takes away {list(d.removed)}")
    _check_placement(old, new, d)
    _check_state(old, new, d)
    return d


def _check_move(named: list[str], old: Topology, new: Topology, d: Diff) -> Diff:
    """A move changes where the named components run, and nothing else."""
    if d.added or d.removed or set(d.replaced) != set(named):
        raise EditError(
            f"a move changes only where {', '.join(named)} run, but this edit would {d}: "
            "send no new code with a move"
        )

    def unplaced(spec: ComponentSpec) -> ComponentSpec:  # the mark of a move is no code
        config = {k: v for k, v in spec.config.items() if k != HANDOVER}
        return replace(spec, placement=Placement(), config=config)

    for name in named:
        if fingerprint(unplaced(new.component(name))) != fingerprint(unplaced(old.component(name))):
            raise EditError(f"a move changes only where {name!r} runs, but its code changes too")
    return Diff(replaced=tuple(named))


def _fusion_hint(old: Topology, new: Topology, d: Diff) -> str:
    """Why a DSL attach changed existing components: a new reader split a fused chain."""
    names = {c.name for c in new.components}
    split = [
        n
        for n in d.replaced
        if n in names
        and list(new.component(n).config.get(DSL_STEPS, ()))
        != list(old.component(n).config.get(DSL_STEPS, ()))
    ]
    if not split:
        return ""
    return (
        f" (the DSL had fused steps into {', '.join(map(repr, split))}; a new reader of a "
        "step inside a fused chain splits it: attach to a step that ends a component (see "
        "GET .../plan, 'fused'), or build with Pipeline(..., fuse=False))"
    )


def _check_placement(old: Topology, new: Topology, d: Diff) -> None:
    for name in d.replaced:
        a, b = old.component(name), new.component(name)
        if a.kind != b.kind:
            raise EditError(f"{name!r} is a {a.kind} and cannot be replaced by a {b.kind}")
        if a.placement != b.placement:
            raise EditError(
                f"{name!r} would move from {a.placement.where} to {b.placement.where}: a "
                "replacement keeps its placement: a move (`headwater move`) places it elsewhere"
            )
        if a.config.get(HANDOVER) != b.config.get(HANDOVER):  # the cloud's hand-over bolt
            raise EditError(
                f"{name!r} was moved (`headwater move`) and the cloud still takes what agents "
                "send from where it ran: an edit keeps the move's headwater_placement.json "
                "beside the topology file (the console's edits keep it; GET .../files has it)"
            )
    # an agent's edge subgraph may change on its own, but what crosses to the cloud must stay:
    # the boundary is in two domains (the agent's outbox, the cloud's receiver)
    before, after = boundary(old), boundary(new)
    if before != after:
        raise EditError(
            f"the edit changes what the edge sends to the cloud ({_crossing(before)} -> "
            f"{_crossing(after)}): live edits keep the edge/cloud boundary as it is; redeploy "
            "the topology to change it"
        )
    for name in d.replaced:
        if name in before and old.component(name).outputs != new.component(name).outputs:
            raise EditError(
                f"{name!r} sends its streams to the cloud: its replacement must keep their fields"
            )


def _crossing(crossing: dict[str, list[str]]) -> str:
    return ", ".join(f"{c}:{'/'.join(s)}" for c, s in sorted(crossing.items())) or "nothing"


def touches_edge(old: Topology, new: Topology, d: Diff) -> bool:
    """Whether the edit changes components that run on edge agents."""
    names = {c.name: c for c in (*old.components, *new.components)}
    return any(names[n].placement.is_edge for n in (*d.added, *d.removed, *d.replaced))


def plan_diff(old: Topology, new: Topology, d: Diff) -> dict[str, Any]:
    """What an edit changes, for a preview: the diff, the components whose parallelism
    changes (``rescaled``: name -> [before, after]), what keeps its state (``unchanged``, and
    ``replaced``: checked to read its predecessor's), what starts empty (``added``) or goes
    (``removed``), and the domains that switch (``edge``: the agents running the edge
    subgraph; ``cloud``: the workers)."""
    before = {c.name: c for c in old.components}
    after = {c.name: c for c in new.components}
    touched = {*d.added, *d.removed, *d.replaced}
    return {
        **d.to_dict(),
        "rescaled": {
            n: [before[n].parallelism, after[n].parallelism]
            for n in d.replaced
            if before[n].parallelism != after[n].parallelism
        },
        "unchanged": [n for n in after if n in before and n not in touched],
        "domains": sorted(  # a move switches where it was and where it goes
            {
                "edge" if spec.placement.is_edge else "cloud"
                for n in touched
                for spec in (before.get(n), after.get(n))
                if spec is not None
            }
        ),
        "edge": touches_edge(old, new, d),
    }


def _check_state(old: Topology, new: Topology, d: Diff) -> None:
    """A replacement must be able to read the state its predecessor leaves it."""
    for name in d.replaced:
        a, b = old.component(name), new.component(name)
        old_steps = list(a.config.get(DSL_STEPS, ()))
        new_steps = list(b.config.get(DSL_STEPS, ()))
        lost = [s for s in old_steps if s not in new_steps]
        if old_steps and lost:
            raise EditError(
                f"the replacement of {name!r} drops the steps {lost}, whose state it would not "
                "read: keep the step names (state is kept by step name) or remove the "
                "component and attach a new one"
            )
        old_schema = getattr(a.factory, STATE_SCHEMA, None)
        new_schema = getattr(b.factory, STATE_SCHEMA, None)
        if old_schema != new_schema and not hasattr(b.factory, MIGRATE):
            raise EditError(
                f"the replacement of {name!r} declares state_schema {new_schema!r} but the "
                f"running one has {old_schema!r}, and it has no {MIGRATE}() to read the old "
                "state: add one, or keep the schema"
            )


@dataclass
class RevisionRecord:
    revision: int
    action: str
    package: str  # sha256:...
    entry: str
    exclude: list[str]  # components left out of the package's topology
    author: str
    time: float
    diff: dict[str, list[str]]
    plan: dict[str, Any]  # the cloud physical plan (task ids travel with it)
    status: RevisionStatus = RevisionStatus.APPLYING
    error: str = ""
    switch_at: int = 0  # the checkpoint it took over from
    hash: str = field(default="")
    reason: str = ""  # why the edit was made (the health manager's diagnosis), if said

    def __post_init__(self) -> None:
        self.status = RevisionStatus(self.status)  # a str when read from the log
        if not self.hash:
            content = json.dumps([self.package, self.entry, sorted(self.exclude)])
            self.hash = "sha256:" + hashlib.sha256(content.encode()).hexdigest()

    def view(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("plan")
        return d


INTERRUPTED = "the master restarted during the edit"
"""The error of a revision whose topology master stopped while applying it (rolled back)."""


def interrupted(record: RevisionRecord) -> bool:
    """Whether ``record`` was rolled back only because its topology master stopped during it
    (an agent killed mid-switch takes the revision again when it is back)."""
    return record.status is RevisionStatus.ROLLED_BACK and record.error == INTERRUPTED


class RevisionLog:
    """Every revision of a topology, persisted beside its checkpoint catalogue (a record
    of the state manager, or its file's path)."""

    def __init__(self, path: str | os.PathLike[str] | Record) -> None:
        self.record = as_record(path)
        self.records: list[RevisionRecord] = []
        kept = self.record.read()
        if kept is not None:
            self.records = [RevisionRecord(**r) for r in json.loads(kept)]
            for r in self.records:
                if r.status is RevisionStatus.APPLYING:  # the topology master stopped during it
                    r.status = RevisionStatus.ROLLED_BACK
                    r.error = INTERRUPTED

    def find(self, revision: int) -> RevisionRecord | None:
        return next((r for r in self.records if r.revision == revision), None)

    def next_number(self) -> int:
        return max((r.revision for r in self.records), default=0) + 1

    def add(self, record: RevisionRecord) -> None:
        """Add ``record``; one of the same number (an interrupted one taken again) goes."""
        self.records = [r for r in self.records if r.revision != record.revision]
        self.records.append(record)
        self.save()

    def save(self) -> None:
        """Keep the log (StateError if it could not be kept)."""
        self.record.write(json.dumps([asdict(r) for r in self.records]).encode())


def first_record(package: str, entry: str, plan: Mapping[str, Any]) -> RevisionRecord:
    return RevisionRecord(
        1,
        "submit",
        package,
        entry,
        [],
        "",
        time.time(),
        {},
        dict(plan),
        status=RevisionStatus.APPLIED,
    )
