"""A topology without its code: a JSON description, and the skeleton the master rebuilds from it.

The master never runs a submitted file (``_child_loader`` loads it in a child
process), yet it validates the topology, splits off its cloud part, packs it,
hosts its topology master and compares revisions of it. All of that reads the
logical plan as data: names, kinds, parallelism, streams and their fields and
schema types, inputs and their groupings, config, placement and dead letters,
plus what a revision compares of the code (``code_of``: its source, hashed;
``state_schema``; whether it has ``migrate_state``). ``describe`` writes that
as JSON-ready data in the child; ``from_description`` reads it back in the
master into a *skeleton*: a ``Topology`` whose factories are ``DescribedCode``
and whose custom groupings are ``DescribedGrouping``, stand-ins that refuse to
be called. Config values that JSON cannot carry travel as their ``repr``.

A description comes from user code, so ``from_description`` trusts nothing in
it: a wrong type or a missing key is a ``TopologyLoadError``, and so is a
topology of more than ``MAX_TASKS`` tasks (the master builds one record per
task).

>>> from headwater import Topology, Spout
>>> class Words(Spout):
...     outputs = ("word",)
...     def next_tuple(self): ...
>>> t = from_description(describe(Topology("wc").add_spout("words", Words, parallelism=2)))
>>> t.name, t.component("words").parallelism, t.component("words").outputs[0].fields
('wc', 2, ('word',))
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from .._exceptions import TopologyLoadError
from ..api import ComponentSpec, Grouping, Input, Placement, Stream, Topology
from ..api._stream import CustomGrouping
from ..wire import SUPPORTED_TYPES

MAX_TASKS = 10_000
"""The most tasks (parallelism summed over components) a described topology may have."""
STATE_SCHEMA = "state_schema"  # a component class attribute: the shape of its state
MIGRATE = "migrate_state"  # a component's hook that reads an older state_schema
_TYPES = {t.__name__: t for t in SUPPORTED_TYPES}
T = TypeVar("T")


@dataclass(frozen=True)
class DescribedCode:
    """A skeleton component's factory: what is known of its code, never the code.

    ``code`` is the digest of ``code_of`` the real factory; ``state_schema`` and
    ``migrate_state`` answer as the real factory's attributes do (``_revisions``
    reads them to check a replacement).
    """

    code: str
    state_schema: Any = None
    migrates: bool = False

    @property
    def migrate_state(self) -> None:
        if not self.migrates:
            raise AttributeError(MIGRATE)  # so hasattr() says what the real factory has

    def __call__(self) -> NoReturn:
        raise RuntimeError("a described topology has no code: build components from the file")


class DescribedGrouping:
    """A skeleton's custom grouping: the master validates it, never routes with it."""

    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None:
        raise RuntimeError("a described topology has no code: route in the instances")

    def choose_tasks(self, values: list[object]) -> list[int]:
        raise RuntimeError("a described topology has no code: route in the instances")


def code_of(obj: Any, depth: int = 3) -> list[str]:
    """The source of ``obj`` and of the callables it carries (partials, closures, steps).

    For a ``DescribedCode`` it is the digest the description carries, so two
    skeletons compare as the files they were described from.
    """
    if isinstance(obj, DescribedCode):
        return [f"described:{obj.code}"]
    if depth < 0:
        return []
    out: list[str] = []
    if isinstance(obj, functools.partial):
        out += code_of(obj.func, depth)
        for a in (*obj.args, *obj.keywords.values()):
            out += code_of(a, depth - 1)
        return out
    if isinstance(obj, (list, tuple)):
        for a in obj:
            out += code_of(a, depth - 1)
        return out
    if inspect.isclass(obj):
        # a class's own source is looked up through its module, which for a topology file
        # run as __main__ is the wrong one; its methods know their file
        for klass in obj.__mro__:
            if klass.__module__.split(".")[0] in ("builtins", "headwater", "common", "abc"):
                continue
            out.append(klass.__qualname__)
            for name, v in sorted(vars(klass).items()):
                if inspect.isfunction(v) or isinstance(v, (staticmethod, classmethod)):
                    out += code_of(getattr(v, "__func__", v), depth)
                elif not name.startswith("__") and isinstance(v, (str, int, float, tuple)):
                    out.append(f"{name}={v!r}")
        return out
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        try:
            out.append(inspect.getsource(obj))
        except (OSError, TypeError):
            out.append(getattr(obj, "__qualname__", repr(obj)))
        for cell in getattr(obj, "__closure__", None) or ():
            with contextlib.suppress(ValueError):  # an empty cell
                out += code_of(cell.cell_contents, depth - 1)
        return out
    attrs = getattr(obj, "__dict__", None)
    if attrs is not None and not inspect.ismodule(obj):
        out.append(type(obj).__qualname__)
        for v in attrs.values():
            out += code_of(v, depth - 1)
    return out


# -- describing (in the process that ran the file) ----------------------------------------
def describe(topology: Topology) -> dict[str, Any]:
    """``topology`` as JSON-ready data, without its code."""
    return {
        "name": topology.name,
        "config": _data(topology.config),
        "dead_letters": topology.dead_letters,
        "components": [_describe_component(c) for c in topology.components],
    }


def _describe_component(c: ComponentSpec) -> dict[str, Any]:
    digest = hashlib.sha256(json.dumps(code_of(c.factory)).encode()).hexdigest()
    return {
        "name": c.name,
        "kind": c.kind,
        "parallelism": c.parallelism,
        "inputs": [
            {
                "component": i.component,
                "stream": i.stream,
                "grouping": i.grouping.kind,
                "fields": list(i.grouping.fields),
                "custom": isinstance(i.grouping.custom, CustomGrouping),
            }
            for i in c.inputs
        ],
        "outputs": [
            {
                "name": s.name,
                "fields": list(s.fields),
                "direct": s.direct,
                "schema": None if s.schema is None else [_type_name(t) for t in s.schema],
            }
            for s in c.outputs
        ],
        "config": _data(c.config),
        "placement": {"where": c.placement.where, "selector": _data(c.placement.selector)},
        "code": digest,
        "state_schema": _data(getattr(c.factory, STATE_SCHEMA, None)),
        "migrates": hasattr(c.factory, MIGRATE),
    }


def _type_name(tp: object) -> str:
    """A schema type: the wire type it is (or subclasses), else ``!`` and its name."""
    if isinstance(tp, type):
        for t in SUPPORTED_TYPES:
            if issubclass(tp, t):
                return t.__name__
    return "!" + str(getattr(tp, "__qualname__", tp))


def _data(value: object, depth: int = 16) -> Any:
    """``value`` as JSON can carry it: containers as lists and dicts, anything else its repr."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)  # a StrEnum as its value, as the runtime reads it
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if depth > 0 and isinstance(value, (list, tuple)):
        return [_data(v, depth - 1) for v in value]
    if depth > 0 and isinstance(value, Mapping):
        return {str(k): _data(v, depth - 1) for k, v in value.items()}
    return repr(value)


# -- reading back (in the master) ----------------------------------------------------------
def from_description(data: object) -> Topology:
    """The skeleton of a described topology; TopologyLoadError if ``data`` is not a description."""
    d = _dict(data, "the description")
    components = [_component(c) for c in _list(d, "components")]
    tasks = sum(c.parallelism for c in components)
    name = _str(d, "name")
    if tasks > MAX_TASKS:
        raise TopologyLoadError(
            f"topology {name!r} asks for {tasks} tasks; the master runs at most {MAX_TASKS}: "
            "lower the parallelism"
        )
    dead = d.get("dead_letters")
    return Topology(
        name,
        tuple(components),
        _config(d),
        None if dead is None else _of(dead, str, "dead_letters"),
    )


def _component(data: object) -> ComponentSpec:
    d = _dict(data, "a component")
    kind = _str(d, "kind")
    if kind not in ("spout", "bolt"):
        raise _malformed(f"component kind {kind!r}")
    placement = _dict(d.get("placement"), "placement")
    where = _str(placement, "where")
    if where not in ("cloud", "edge"):
        raise _malformed(f"placement {where!r}")
    selector = {k: _of(v, str, "a selector's label") for k, v in _dict_at(placement, "selector")}
    return ComponentSpec(
        _str(d, "name"),
        "spout" if kind == "spout" else "bolt",
        DescribedCode(
            _str(d, "code"), d.get("state_schema"), _of(d.get("migrates"), bool, "migrates")
        ),
        _int(d, "parallelism"),
        tuple(_input(i) for i in _list(d, "inputs")),
        tuple(_stream(s) for s in _list(d, "outputs")),
        _config(d),
        Placement("edge" if where == "edge" else "cloud", selector),
    )


def _input(data: object) -> Input:
    d = _dict(data, "an input")
    custom = DescribedGrouping() if _of(d.get("custom"), bool, "custom") else None
    grouping = Grouping(_str(d, "grouping"), _strs(d, "fields"), custom)
    return Input(_str(d, "component"), _str(d, "stream"), grouping)


def _stream(data: object) -> Stream:
    d = _dict(data, "a stream")
    names = d.get("schema")
    schema = None if names is None else tuple(_schema_type(n) for n in _of(names, list, "schema"))
    return Stream(_strs(d, "fields"), _str(d, "name"), _of(d.get("direct"), bool, "direct"), schema)


def _schema_type(name: object) -> type:
    text = _of(name, str, "a schema type")
    if text in _TYPES:
        return _TYPES[text]
    # a type the wire cannot carry: a stand-in by its name, for validate's message
    shown = text.removeprefix("!")
    return type(shown.rsplit(".", 1)[-1] or "unknown", (), {"__qualname__": shown})


def _config(d: dict[str, Any]) -> dict[str, Any]:
    return dict(_dict_at(d, "config"))


# strict accessors: a description is user output
def _malformed(what: str) -> TopologyLoadError:
    return TopologyLoadError(f"the topology's description is malformed: {what}")


def _of(value: object, kind: type[T], what: str) -> T:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _malformed(f"{what} is {type(value).__name__}, not {kind.__name__}")
    return value


def _dict(value: object, what: str) -> dict[str, Any]:
    return _of(value, dict, what)


def _dict_at(d: dict[str, Any], key: str) -> Sequence[tuple[str, Any]]:
    return list(_dict(d.get(key), key).items())


def _list(d: dict[str, Any], key: str) -> list[Any]:
    return _of(d.get(key), list, key)


def _str(d: dict[str, Any], key: str) -> str:
    return _of(d.get(key), str, key)


def _int(d: dict[str, Any], key: str) -> int:
    return _of(d.get(key), int, key)


def _strs(d: dict[str, Any], key: str) -> tuple[str, ...]:
    return tuple(_of(v, str, key) for v in _list(d, key))
