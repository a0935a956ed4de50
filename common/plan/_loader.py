"""Load a topology file, whatever API style it uses.

A file may define one native ``headwater.Topology`` value, one heronpy-style
``Topology`` subclass, or build one with heronpy's ``TopologyBuilder`` and
call ``build_and_submit()`` under ``__main__``. The file runs as ``__main__``
in every process that needs the components (launcher, containers,
instances), exactly as Heron runs a Python topology's module on each
container, so it must build the same topology every time. ``sys.argv`` is
the file then the arguments in ``HEADWATER_TOPOLOGY_ARGS`` (``headwater run
FILE -- ARGS``), the same in every process.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._exceptions import TopologyLoadError
from ..api import Topology
from ..api._submit import capturing
from ._domains import for_domain
from ._package_attached import with_attached
from ._package_models import with_models
from ._package_parallelism import with_parallelism
from ._package_placement import with_placement

ARGS_ENV = "HEADWATER_TOPOLOGY_ARGS"
"""A JSON list: the file sees it as ``sys.argv[1:]`` (``headwater run FILE -- ARGS``)."""


def topology_args() -> list[str]:
    """The arguments every process running the file gives it (``ARGS_ENV``, else none)."""
    raw = os.environ.get(ARGS_ENV)
    if not raw:
        return []
    try:
        args = json.loads(raw)
    except ValueError:
        args = None
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise TopologyLoadError(f"{ARGS_ENV} must be a JSON list of strings, got {raw!r}")
    return args


def load_topology(
    path: str | os.PathLike[str],
    name: str | None = None,
    domain: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Topology:
    """Run ``path`` and return the one topology it defines (or the one called ``name``).

    With a ``domain`` (``cloud``, or ``edge`` with the agent's ``labels``: what a
    worker's or an agent's container and its instances are started with, see
    ``domain_args``), it returns that domain's subgraph; without one, the whole
    topology, placement ignored (as ``headwater run`` runs it).
    """
    topology = _load(path, name)
    return for_domain(topology, domain, labels) if domain else topology


def _load(
    path: str | os.PathLike[str], name: str | None = None, defined: dict[str, Any] | None = None
) -> Topology:
    """``defined``: filled with what running the file defined (its namespace)."""
    file = Path(path).resolve()
    if not file.is_file():
        raise TopologyLoadError(f"no topology file at {str(path)!r}: check the path")
    old_argv, old_path = sys.argv[:], sys.path[:]
    sys.argv = [str(file), *topology_args()]
    sys.path.insert(0, str(file.parent))
    try:
        with capturing() as captured:
            try:
                namespace = runpy.run_path(str(file), run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    raise TopologyLoadError(
                        f"{file} exited with {exc.code!r} while loading"
                    ) from exc
                namespace = {}
            except Exception as exc:
                raise TopologyLoadError(
                    f"{file} raised {type(exc).__name__} while loading: {exc}"
                ) from exc
            found = list(captured) + _found_in(namespace)
            if defined is not None:
                defined.update(namespace)
    finally:
        sys.argv = old_argv
        # keep the file's folder importable: its components may import siblings lazily
        sys.path[:] = old_path if str(file.parent) in old_path else [str(file.parent), *old_path]
    unique: dict[str, Topology] = {}
    for topo in found:
        unique.setdefault(topo.name, topo)
    unique = {k: _sidecars(t, file, namespace) for k, t in unique.items()}
    if name is not None:
        if name not in unique:
            raise TopologyLoadError(
                f"{file} defines no topology named {name!r} (found: {sorted(unique) or 'none'})"
            )
        return unique[name]
    if not unique:
        raise TopologyLoadError(
            f"{file} defines no topology: define a headwater.Topology value, a heronpy "
            "Topology subclass, or call TopologyBuilder.build_and_submit() under __main__"
        )
    if len(unique) > 1:
        raise TopologyLoadError(
            f"{file} defines {len(unique)} topologies ({', '.join(sorted(unique))}): "
            "keep one per file or choose one with --topology NAME"
        )
    return next(iter(unique.values()))


def _sidecars(topology: Topology, file: Path, namespace: dict[str, Any]) -> Topology:
    """``topology`` as the files beside ``file`` amend it: models, attached components,
    parallelism, placement (``_package_*``), in that order."""
    folder = file.parent
    attached = with_attached(with_models(topology, folder), file, namespace)
    return with_placement(with_parallelism(attached, folder), folder)


def _found_in(namespace: dict[str, Any]) -> list[Topology]:
    out: list[Topology] = []
    for value in namespace.values():
        if isinstance(value, Topology):
            out.append(value)
        elif isinstance(value, type) and value.__module__ == "__main__":
            convert = getattr(value, "__headwater_topology__", None)
            if callable(convert):
                topo = convert()
                if topo is not None:
                    out.append(topo)
    return out
