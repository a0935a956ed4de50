"""No platform module names an example's datasets or columns: the Spark half, the landing, the
CLI and the daemons serve any topology, and an example is one user of them (issue 32)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = ("common", "cloud", "headwater")
# the demo is the IoT example's runner (`headwater demo`, its simulated sensors): it may
DEMO = ("headwater/_demo/", "headwater/_sensors_cli.py", "headwater/examples")
# the examples' landed datasets and the columns only they have (``ts``, ``value``, ``site``
# and ``date`` are everyone's words, and the landing's own partitions; the rollout's guard
# reads a component's metrics, not a dataset: its counter names are the models issue's)
EXAMPLE_NAMES = frozenset(
    {
        # examples/iot
        "readings",
        "sensor_windows",
        "sensor",
        "smoothed",
        "anomaly",
        # examples/energy
        "meters",
        "meter_id",
        "kwh",
        "voltage",
        "grid_events",
        "tariffs",
    }
)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (a module's, a class's, a function's)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def named_example_names(source: str, filename: str) -> list[str]:
    """``file:line: 'name'`` for each string constant (docstrings aside) that is an
    example's dataset or column name."""
    tree = ast.parse(source, filename)
    docs = _docstrings(tree)
    return [
        f"{filename}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in EXAMPLE_NAMES
        and id(node) not in docs
    ]


def _platform_files() -> list[Path]:
    files = []
    for top in PLATFORM:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_symlink() or any(rel.startswith(d) for d in DEMO):
                continue
            if top == "headwater" and path.parent != ROOT / "headwater":
                continue  # headwater/common, cloud, edge: links to the folders walked
            files.append(path)
    return files


def test_no_platform_module_names_an_examples_columns_or_datasets() -> None:
    found = [
        hit
        for path in _platform_files()
        for hit in named_example_names(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert not found, "\n".join(found)


def test_the_walk_sees_the_platform_and_the_check_sees_names() -> None:
    rels = {p.relative_to(ROOT).as_posix() for p in _platform_files()}
    assert {"cloud/spark/_rollup.py", "common/connectors/_landing.py", "headwater/_cli.py"} <= rels
    assert not any(r.startswith("headwater/_demo/") for r in rels)
    src = '"""readings are read."""\nx = {"sensor": 1}\ndef f():\n    "anomaly"\n    return "kwh"\n'
    assert named_example_names(src, "m.py") == ["m.py:2: 'sensor'", "m.py:5: 'kwh'"]
