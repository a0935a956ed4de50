"""The package's import graph: no cycles, and no layer pointing back.

Static, in the spirit of zeroconf's ``tests/test_circular_imports.py``: every
module of ``headwater`` (``common/``, ``cloud/``, ``edge/`` and ``headwater/``
itself, generated protobuf stubs included) is parsed with ``ast``; each
``import`` and ``from ... import`` is resolved (relative ones against the
module's package) to the most specific module of the package it names, so
``from headwater.common.plan import _domains`` is an edge to
``headwater.common.plan._domains`` and ``from headwater.common.plan import
validate`` an edge to the package ``headwater.common.plan`` (whose
``__init__`` runs). The implicit import of parent packages is not an edge.

What counts:

- **Imports inside functions count**, for cycles and for layers alike: they
  run, just later, and an import hidden in a function is still a lower layer
  knowing a higher one.
- **Imports under** ``if TYPE_CHECKING:`` **count for layers and for
  cycles**: they never run, which is what they are for (STYLE.md), but a lower
  layer naming a higher layer's type still points back, and a helper module
  that names the whole object using it is a knot a reader must untie at once:
  pass the helper a Protocol of the lower layer or of its own module instead.

Layers, lowest first (a module may import its own layer and the layers
below; wire is the floor everything may stand on):

0. ``foundations``: cross-cutting ``common/_*.py`` (exceptions, health,
   clock, retry, ids, logging, packages, discovery) and ``common/wire``.
1. ``api``: ``common/api``, ``common/dsl``, ``headwater/heronpy``,
   ``headwater/placement.py``, ``headwater/dsl.py``, and the package root
   ``headwater/__init__.py``, which re-exports the public API (so anything
   that may import the API may ``import headwater``; nothing below may).
2. ``plan``: ``common/plan`` (validation, physical plan, domains, the
   topology loader).
3. ``runtime``: ``common/runtime``, ``common/state``, ``common/connectors``.
4. ``control``: ``common/control``.
5. ``daemons``: ``cloud/``, ``edge/``, ``common/node`` (the node daemon
   shared by the cloud worker and the edge agent), ``common/console`` (the web
   console the master and the agents serve), ``headwater/_cli*``,
   ``headwater/_demo``, ``headwater/__main__``.

And ``edge`` and ``cloud`` never import each other. Every violation is
reported with file and line.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

import headwater

ROOT = Path(headwater.__file__).parent
PACKAGE = "headwater"

LAYERS = ("foundations", "api", "plan", "runtime", "control", "daemons")

# module-name prefixes -> layer; the longest matching prefix wins
_PREFIXES: dict[str, str] = {
    "headwater": "api",
    "headwater.__main__": "daemons",
    "headwater._cli": "daemons",
    "headwater._run_cli": "daemons",
    "headwater._daemon_cli": "daemons",
    "headwater._daemon_run": "daemons",
    "headwater._agent_cli": "daemons",
    "headwater._cluster_cli": "daemons",
    "headwater._edits_cli": "daemons",
    "headwater._health_cli": "daemons",
    "headwater._train_cli": "daemons",
    "headwater._spark_cli": "daemons",
    "headwater._spark_jobs_cli": "daemons",
    "headwater._spark_run_cli": "daemons",
    "headwater._models_cli": "daemons",
    "headwater._docker_cli": "daemons",
    "headwater._limits_cli": "daemons",
    "headwater._read_cli": "daemons",
    "headwater._logs_cli": "daemons",
    "headwater._sensors_cli": "daemons",
    "headwater._demo": "daemons",
    "headwater.placement": "api",
    "headwater.spark": "daemons",  # the Spark jobs' API: cloud/spark re-exported
    "headwater.connectors": "runtime",  # re-exports common/connectors (sinks run in the runtime)
    "headwater.models": "runtime",  # re-exports common/models and the runtime's live_model
    "headwater.dsl": "api",
    "headwater.heronpy": "api",
    "headwater.testing": "runtime",  # the in-memory test kit: the runtime's parts, one process
    "headwater.common": "foundations",
    "headwater.common.wire": "foundations",
    "headwater.common.security": "foundations",
    "headwater.common.statemgr": "foundations",  # the records every layer's stores keep
    "headwater.common.api": "api",
    "headwater.common.dsl": "api",
    "headwater.common.plan": "plan",
    "headwater.common.runtime": "runtime",
    "headwater.common.state": "runtime",
    "headwater.common.connectors": "runtime",
    "headwater.common.control": "control",
    "headwater.common.health": "control",  # the health manager's decisions (pure)
    "headwater.common.node": "daemons",
    "headwater.common.console": "daemons",
    "headwater.cloud": "daemons",
    "headwater.edge": "daemons",
}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    file: Path
    line: int
    type_checking: bool

    @property
    def where(self) -> str:
        # the file's own path in the repository (common/, edge/, cloud/ are symlinked in)
        return f"{self.file.resolve().relative_to(ROOT.parent.resolve())}:{self.line}"


def _module_files() -> dict[str, Path]:
    """Every module of the package, by dotted name (following the symlinked folders)."""
    out: dict[str, Path] = {}
    files = [
        Path(folder, name)
        for folder, dirs, names in os.walk(ROOT, followlinks=True)
        # headwater/examples links to examples/: topology files, not modules of the package
        if not dirs.sort() and "__pycache__" not in folder and not _is_examples(folder)
        for name in names
        if name.endswith(".py")
    ]
    for path in sorted(files):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = [PACKAGE, *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_examples(folder: str) -> bool:
    return Path(folder).relative_to(ROOT).parts[:1] == ("examples",)


MODULES = _module_files()


def layer_of(module: str) -> str:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in _PREFIXES:
            return _PREFIXES[prefix]
    raise AssertionError(f"{module} is in no layer: add it to _PREFIXES")


def _side(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ("cloud", "edge") else None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str) -> str | None:
    """The most specific module of the package that ``name`` names (None if outside)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in MODULES:
            return candidate
    return None


def _imports_of(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    out: list[Import] = []

    def add(name: str, node: ast.stmt, tc: bool) -> None:
        target = _resolve(name)
        imp = Import(module, target or "", path, node.lineno, tc)
        if target is not None and target != module and imp not in out:
            out.append(imp)

    def visit(node: ast.AST, tc: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                visit(stmt, True)
            for stmt in node.orelse:
                visit(stmt, tc)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, tc)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                add(f"{prefix}.{alias.name}" if alias.name != "*" else prefix, node, tc)
        for child in ast.iter_child_nodes(node):
            visit(child, tc)

    visit(tree, False)
    return out


def _all_imports() -> list[Import]:
    return [imp for module, path in MODULES.items() for imp in _imports_of(module, path)]


IMPORTS = _all_imports()


def _graph(imports: list[Import], type_checking: bool) -> dict[str, list[Import]]:
    graph: dict[str, list[Import]] = {}
    for imp in imports:
        if type_checking or not imp.type_checking:
            graph.setdefault(imp.source, []).append(imp)
    return graph


def _components(graph: dict[str, list[Import]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for imp in graph.get(v, []):
            w = imp.target
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return components


def _cycle_in(component: set[str], graph: dict[str, list[Import]]) -> list[Import]:
    """The shortest cycle through the component's first module, within the component (BFS)."""
    start = min(component)
    parent: dict[str, Import] = {}
    frontier = [start]
    found: Import | None = None
    while frontier and found is None:
        nxt: list[str] = []
        for imp in (imp for v in frontier for imp in graph.get(v, [])):
            if imp.target == start:
                found = imp
                break
            if imp.target in component and imp.target not in parent:
                parent[imp.target] = imp
                nxt.append(imp.target)
        frontier = nxt
    assert found is not None
    path = [found]
    while path[0].source != start:
        path.insert(0, parent[path[0].source])
    return path


def _cycles(imports: list[Import], type_checking: bool = False) -> list[list[Import]]:
    """One cycle per strongly connected component of the import graph.

    The runtime graph by default; with ``type_checking`` the imports under
    ``if TYPE_CHECKING:`` count too (a cycle there is a helper module that
    knows the whole object that uses it: pass it a Protocol instead).
    """
    graph = _graph(imports, type_checking)
    return [_cycle_in(component, graph) for component in _components(graph)]


def _describe(cycle: list[Import]) -> str:
    def arrow(imp: Import) -> str:
        tc = ", TYPE_CHECKING" if imp.type_checking else ""
        return f"{imp.target} ({imp.where}{tc})"

    return " -> ".join([cycle[0].source, *map(arrow, cycle)])


def _type_checking_cycle_report(imports: list[Import]) -> list[str]:
    graph = _graph(imports, type_checking=True)
    return [
        f"import cycle (TYPE_CHECKING imports count): {_describe(_cycle_in(c, graph))}; "
        "pass the helper a Protocol of its own module instead of the whole object"
        for c in _components(graph)
    ]


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        assert layer_of(module) in LAYERS


def test_no_import_cycles() -> None:
    cycles = _cycles(IMPORTS)
    report = [_describe(c) for c in cycles]
    assert not report, "import cycles:\n" + "\n".join(report)


def test_no_import_cycles_through_type_checking() -> None:
    report = _type_checking_cycle_report(IMPORTS)
    assert not report, "\n".join(report)


def test_no_layer_points_back() -> None:
    bad = []
    for imp in IMPORTS:
        src, dst = layer_of(imp.source), layer_of(imp.target)
        if LAYERS.index(dst) > LAYERS.index(src):
            tc = " (under TYPE_CHECKING)" if imp.type_checking else ""
            bad.append(f"{imp.where}: {imp.source} ({src}) imports {imp.target} ({dst}){tc}")
    assert not bad, "imports from a lower layer into a higher one:\n" + "\n".join(bad)


def test_edge_and_cloud_never_import_each_other() -> None:
    bad = [
        f"{imp.where}: {imp.source} imports {imp.target}"
        for imp in IMPORTS
        if {_side(imp.source), _side(imp.target)} == {"cloud", "edge"}
    ]
    assert not bad, "edge and cloud import each other:\n" + "\n".join(bad)


def test_the_checker_sees_what_it_must() -> None:
    # guard against a checker that passes because it parses nothing
    assert len(MODULES) > 100
    assert "headwater.common.runtime._stmgr" in MODULES
    sources = {imp.source for imp in IMPORTS}
    assert "headwater.common.runtime._stmgr" in sources
    # a relative import resolves within the package
    targets = {imp.target for imp in IMPORTS if imp.source == "headwater.common.plan"}
    assert "headwater.common.plan._physical" in targets


def test_the_checker_finds_a_cycle_and_spares_type_checking() -> None:
    f = ROOT / "__init__.py"
    imports = [
        Import("a", "b", f, 1, False),
        Import("b", "c", f, 2, False),
        Import("c", "a", f, 3, False),
        Import("c", "d", f, 4, False),
        Import("d", "c", f, 5, True),
    ]
    (cycle,) = _cycles(imports)
    assert [imp.source for imp in cycle] == ["a", "b", "c"]
    assert cycle[-1].where == "headwater/__init__.py:3"
    knots = [frozenset(c) for c in _components(_graph(imports, type_checking=True))]
    assert knots == [frozenset("abcd")]


def test_the_checker_finds_a_cycle_that_type_checking_imports_make() -> None:
    f = ROOT / "__init__.py"
    imports = [
        Import("a", "b", f, 1, False),
        Import("b", "a", f, 2, True),
        Import("c", "d", f, 3, False),
    ]
    (found,) = _type_checking_cycle_report(imports)
    assert found.startswith("import cycle (TYPE_CHECKING imports count): a -> b")
    assert "b (headwater/__init__.py:1) -> a (headwater/__init__.py:2, TYPE_CHECKING);" in found
    assert _type_checking_cycle_report(imports[:1] + imports[2:]) == []


def test_layers_of_known_modules() -> None:
    assert layer_of("headwater") == "api"
    assert layer_of("headwater.common._retry") == "foundations"
    assert layer_of("headwater.common.wire.proto.runtime_pb2") == "foundations"
    assert layer_of("headwater.common.plan._loader") == "plan"
    assert layer_of("headwater.common.state._store") == "runtime"
    assert layer_of("headwater.common.node._node") == "daemons"
    assert layer_of("headwater._cli") == "daemons"
