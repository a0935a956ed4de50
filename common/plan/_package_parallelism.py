"""Parallelism set beside the code: ``headwater_parallelism.json``.

A live edit that changes only how many instances a component runs (``replace`` with
``parallelism``, from the CLI, the API or the console) makes a new package revision: the
running package plus, beside its topology file, this file::

    {"count": 4, "split": 2}

Loading the topology file (``_loader``), in every process that loads it (the master's child
loader, workers, agents), sets those components' parallelism, so that the new revision is
the old code at the new parallelism everywhere, and the edit's diff sees the components
changed (their parallelism is part of what a component is). A package the user sends later
carries its own file or none: its code says the parallelism again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from .._exceptions import TopologyLoadError
from .._package import package_files, zip_package
from ._description import MAX_TASKS

PARALLELISM_FILE = "headwater_parallelism.json"
"""The file, beside the topology file, setting components' parallelism."""


def parallelism_problem(doc: Any) -> str | None:
    """Why ``doc`` is not {component: parallelism}, or None."""
    if not isinstance(doc, dict) or not doc:
        return "give at least one component=N"
    for name, n in doc.items():
        if not isinstance(name, str) or not name:
            return "component names are non-empty strings"
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_TASKS:
            return f"{name}: parallelism must be a whole number from 1 to {MAX_TASKS}, got {n!r}"
    return None


def read_sidecar(
    topology: Any, folder: Path, name: str, problem: Callable[[Any], str | None]
) -> dict[str, Any] | None:
    """The sidecar file ``name`` of the package in ``folder`` (None: there is none), checked
    by ``problem`` and against ``topology``'s components; TopologyLoadError saying why not."""
    path = folder / name
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise TopologyLoadError(f"{path}: not a JSON document ({exc})") from None
    said = problem(doc)
    if said is not None:
        raise TopologyLoadError(f"{path}: {said}")
    unknown = sorted(set(doc) - {c.name for c in topology.components})
    if unknown:
        raise TopologyLoadError(f"{path} names {unknown}, which the topology does not have")
    return dict(doc)


def with_parallelism(topology: Any, folder: Path) -> Any:
    """``topology`` with the parallelism ``folder``'s file sets; as it is without the file."""
    doc = read_sidecar(topology, folder, PARALLELISM_FILE, parallelism_problem)
    if doc is None:
        return topology
    components = tuple(
        replace(c, parallelism=doc[c.name]) if c.name in doc else c for c in topology.components
    )
    return replace(topology, components=components)


def package_with_parallelism(data: bytes, entry_file: str, changes: Mapping[str, int]) -> bytes:
    """``data`` (a checked package) with ``changes`` merged into its parallelism file."""
    return package_with_sidecar(data, entry_file, PARALLELISM_FILE, changes, parallelism_problem)


def package_with_sidecar(
    data: bytes,
    entry_file: str,
    file: str,
    changes: Mapping[str, Any],
    problem_of: Callable[[Any], str | None],
) -> bytes:
    """``data`` (a checked package) with ``changes`` merged into the JSON object ``file``
    beside its topology file (this one, ``headwater_placement.json``), ``problem_of`` checking
    the merged document (TopologyLoadError with its reason)."""
    folder = PurePosixPath(entry_file).parent
    name = str(folder / file) if str(folder) != "." else file
    files = package_files(data)
    try:
        doc = json.loads(files.get(name, b"{}"))
    except ValueError:
        doc = {}
    doc = {**(doc if isinstance(doc, dict) else {}), **changes}
    problem = problem_of(doc)
    if problem is not None:
        raise TopologyLoadError(problem)
    files[name] = (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode()
    return zip_package(files)
