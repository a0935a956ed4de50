"""Components attached beside the code: ``headwater_attached.json``.

The console's palette attaches a step without a new topology file: the running package
plus, beside its topology file, this file (a list, in the order they attach)::

    [{"name": "tap_1", "step": "tap", "inputs": {"windows": "shuffle"},
      "parallelism": 1, "placement": "cloud"}]

``step`` is a platform step (``PLATFORM_STEPS``: ``tap``), ``MODULE:CLASS``, a ``Bolt``
subclass of the package made with no arguments (``MODULE`` a module of the package, or the
topology file's own name without ``.py``: a module from elsewhere, ``os`` or ``builtins``, is
refused unimported), or ``map``, ``filter`` or ``keyed`` with ``fn``:
``MODULE:FUNCTION``, a function of the package run as a step (``FunctionStep``; ``keyed``
names its ``key`` field); ``outputs`` (the fields it emits) defaults to its class's, or for
a function to the first input's. ``inputs`` maps each component read to its
grouping: ``shuffle``, ``all``, ``global`` or ``fields:A,B``; ``placement`` is ``cloud``
(the default) or ``edge`` (every agent). Loading the topology file (``_loader``), in every
process that loads it, adds these components, as ``headwater_parallelism.json`` sets
parallelism (``_package_parallelism``), so that the new revision is the old code plus them
everywhere. An attached component's dead letters are not routed to the topology's
dead-letter sink: that would change the sink, which an attach keeps as it is. Removing one
is an edit whose file no longer lists it (the console's Remove does that).
"""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from .._exceptions import TopologyLoadError
from ..api import Bolt, ComponentSpec, Placement, Topology
from ..api._stream import DEFAULT_STREAM, Grouping, Input, all_tasks, fields, global_, shuffle
from ..api._topology import _outputs
from ._description import MAX_TASKS

ATTACHED_FILE = "headwater_attached.json"
"""The file, beside the topology file, listing the components the console attached."""
PLATFORM_STEPS = {
    "tap": ("headwater.common.connectors:Tap", "counts what it sees (tapped), keeps the last 20"),
}
"""Steps the palette offers on any topology: name -> (class, what it does)."""
FUNCTION_STEPS = ("map", "filter", "keyed")
"""How a function of the package runs as a step (``common/connectors/_steps.py``)."""
_FUNCTION_STEP = "headwater.common.connectors._steps:FunctionStep"
_GROUPINGS = {"shuffle": shuffle, "all": all_tasks, "global": global_}


def grouping_of(text: str) -> Grouping:
    """``shuffle``, ``all``, ``global`` or ``fields:A,B`` as a grouping; ValueError else."""
    if text in _GROUPINGS:
        return _GROUPINGS[text]()
    kind, _, names = text.partition(":")
    keys = [n.strip() for n in names.split(",") if n.strip()]
    if kind == "fields" and keys:
        return fields(*keys)
    raise ValueError(f"grouping {text[:40]!r}: use shuffle, all, global or fields:A,B")


def _entry_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return "each attached component is an object"
    name, step, inputs = doc.get("name"), doc.get("step"), doc.get("inputs")
    if not isinstance(name, str) or not name or len(name) > 100:
        return "name: a component name"
    steps = (*PLATFORM_STEPS, *FUNCTION_STEPS)
    if not isinstance(step, str) or (step not in steps and ":" not in step):
        return f"{name}: step is {', '.join(steps)} or MODULE:CLASS"
    if step in FUNCTION_STEPS and (not isinstance(doc.get("fn"), str) or ":" not in doc["fn"]):
        return f"{name}: a {step} step names its function: fn is MODULE:FUNCTION"
    if step == "keyed" and not isinstance(doc.get("key"), str):
        return f"{name}: a keyed step names its key field (key)"
    if not isinstance(inputs, dict) or not inputs:
        return f"{name}: inputs maps at least one component to its grouping"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
        return f"{name}: inputs maps component names to groupings (text)"
    outputs = doc.get("outputs")
    if outputs is not None and not (
        isinstance(outputs, list) and all(isinstance(f, str) and f for f in outputs)
    ):
        return f"{name}: outputs is a list of field names"
    n = doc.get("parallelism", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_TASKS:
        return f"{name}: parallelism is a whole number from 1 to {MAX_TASKS}"
    if doc.get("placement", "cloud") not in ("cloud", "edge"):
        return f"{name}: placement is cloud or edge"
    return None


def _of_package(module: str, root: Path) -> bool:
    """Whether ``module`` is a file of the package at ``root`` (checked unimported)."""
    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return False
    where = root.joinpath(*parts)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _lookup(
    target: str, entry_module: str, namespace: dict[str, Any], root: Path | None = None
) -> Any:
    """``MODULE:NAME``: in what the topology file defined, or in a module imported (with
    ``root``: one of the package's own files only, never ``os`` or ``builtins``)."""
    module, _, qualname = target.partition(":")
    own = module in (entry_module, "__main__")
    if root is not None and not own and not _of_package(module, root):
        raise TopologyLoadError(
            f"{ATTACHED_FILE}: {target[:80]}: {module[:40]!r} is not a module of the "
            "package: attach a function or Bolt of its own files, or a platform step "
            f"({', '.join(PLATFORM_STEPS)})"
        )
    if own:
        obj: Any = namespace.get(qualname.split(".")[0])
        for part in qualname.split(".")[1:]:
            obj = getattr(obj, part, None)
    else:
        try:
            obj = importlib.import_module(module)
        except ImportError as exc:
            raise TopologyLoadError(f"{ATTACHED_FILE}: {target}: {exc}") from None
        where = Path(getattr(obj, "__file__", None) or "/").resolve()
        if root is not None and not where.is_relative_to(root.resolve()):  # os.py: still os
            raise TopologyLoadError(
                f"{ATTACHED_FILE}: {target[:80]}: {module[:40]!r} imports {where}, not the "
                "package's file of that name: rename the package's module"
            )
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
    if (
        root is not None
        and obj is not None
        and getattr(obj, "__module__", None)
        not in (
            module,
            "__main__",
        )
    ):  # what the module imported (its `os`, `system`) is not the package's own code
        raise TopologyLoadError(
            f"{ATTACHED_FILE}: {target[:80]}: defined in {getattr(obj, '__module__', None)!r}, "
            f"not in {module[:40]!r}: attach a function or Bolt the package itself defines"
        )
    return obj


def _fields_of(components: list[ComponentSpec], name: str) -> tuple[str, ...]:
    spec = next((c for c in components if c.name == name), None)
    stream = next((s for s in spec.outputs if s.name == DEFAULT_STREAM), None) if spec else None
    return tuple(stream.fields) if stream is not None else ()


def _factory(doc: dict[str, Any], file: Path, namespace: dict[str, Any], read: Any) -> Any:
    """(factory, default outputs) of an attached component; ``read``: its first input's
    fields."""
    step, entry_module, root = doc["step"], file.stem, file.parent
    if step in FUNCTION_STEPS:
        fn = _lookup(doc["fn"], entry_module, namespace, root)
        if not callable(fn) or isinstance(fn, type):
            raise TopologyLoadError(f"{ATTACHED_FILE}: {doc['fn']} is not a function")
        key = 0
        if step == "keyed":
            if doc["key"] not in read:
                raise TopologyLoadError(
                    f"{ATTACHED_FILE}: {doc['name']}: no field {doc['key']!r} to key by "
                    f"(its input has {', '.join(read) or 'none'})"
                )
            key = read.index(doc["key"])
        cls = _lookup(_FUNCTION_STEP, "", {})
        return partial(cls, step, fn, key), read
    if step in PLATFORM_STEPS:
        obj = _lookup(PLATFORM_STEPS[step][0], "", {})
    else:
        obj = _lookup(step, entry_module, namespace, root)
    if not (isinstance(obj, type) and issubclass(obj, Bolt)):
        raise TopologyLoadError(f"{ATTACHED_FILE}: {step} is not a Bolt class of the package")
    return obj, None


def with_attached(topology: Topology, file: Path, namespace: dict[str, Any]) -> Topology:
    """``topology`` with the components ``file``'s folder's sidecar attaches (``namespace``:
    what running ``file`` defined); as it is without the sidecar."""
    path = file.parent / ATTACHED_FILE
    if not path.is_file():
        return topology
    try:
        docs = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise TopologyLoadError(f"{ATTACHED_FILE}: not a JSON document ({exc})") from None
    if not isinstance(docs, list):
        raise TopologyLoadError(f"{ATTACHED_FILE}: a list of the attached components")
    components = list(topology.components)
    for doc in docs:
        problem = _entry_problem(doc)
        if problem is None and any(c.name == doc["name"] for c in components):
            problem = f"{doc['name']}: the topology has a component of that name"
        if problem is not None:
            raise TopologyLoadError(f"{ATTACHED_FILE}: {problem}")
        read = _fields_of(components, next(iter(doc["inputs"])))
        factory, fields = _factory(doc, file, namespace, read)
        try:
            inputs = tuple(
                Input(c, DEFAULT_STREAM, grouping_of(g)) for c, g in doc["inputs"].items()
            )
        except ValueError as exc:
            raise TopologyLoadError(f"{ATTACHED_FILE}: {doc['name']}: {exc}") from None
        where = doc.get("placement", "cloud")
        spec = ComponentSpec(
            doc["name"],
            "bolt",
            factory,
            doc.get("parallelism", 1),
            inputs,
            _outputs(factory, doc.get("outputs", fields)),
            {},
            Placement(where),
        )
        components.append(spec)
    return replace(topology, components=tuple(components))
