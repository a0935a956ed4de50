"""What a package's code defines, for the console: where each component's code is, and the
palette of what may be attached.

Run in a child process, as a submitted file is loaded (``_child_loader``: the master never
runs user code), ``index_isolated`` answers::

    {"defined": {"smooth": [{"file": "iot_steps.py", "line": 74, "name": "smooth"}, ...]},
     "palette": [{"step": "pipeline:Parse", "name": "Parse", "file": "pipeline.py",
                  "line": 61, "doc": "...", "outputs": [...]}, {"step": "tap", ...}]}

``defined`` lists, per component, the functions and classes of the package its factory
carries (a partial's arguments first, then what it calls: ``smooth``'s step function before
the ``KeyedStep`` class that runs it), found by walking the factory as ``code_of`` does.
``palette``: the ``Bolt`` subclasses defined in the package's own modules that take no
argument (``kind`` bolt), its public functions of one or two arguments (``kind`` function:
run as a ``map`` or ``filter`` of a row, or a ``keyed`` step of (state, row), see
``_package_attached``), then the platform steps (``PLATFORM_STEPS``); an attach names one as
its ``step`` (a function as its ``fn``).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from .._bounded_child import child_answer, child_start, run_bounded
from .._exceptions import TopologyLoadError
from ..api import Bolt
from ._child_loader import LOAD_MEMORY_BYTES, LoadLimits
from ._package_attached import PLATFORM_STEPS

_MODULE = "headwater.common.plan._package_index"
MAX_PALETTE = 200


def _where(obj: Any, root: Path, entry: str) -> tuple[str, int] | None:
    """(file relative to ``root``, line) of a function or class of the package, else None."""
    fn = inspect.unwrap(obj) if callable(obj) else obj
    code = getattr(fn, "__code__", None)
    if code is not None:
        path = Path(code.co_filename)
    else:
        name = getattr(fn, "__module__", "") or ""
        mod = sys.modules.get(name)
        if name == "__main__" or mod is None:
            path = root / entry
        else:
            path = Path(getattr(mod, "__file__", "") or "")
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:
        return None
    if code is not None:
        return rel.as_posix(), code.co_firstlineno
    return rel.as_posix(), _line_of(root / rel, "class", getattr(fn, "__name__", ""))


def _line_of(path: Path, keyword: str, name: str) -> int:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return 1
    found = re.search(rf"^\s*{keyword}\s+{re.escape(name)}\b", text, re.M)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def _carried(obj: Any, depth: int = 6) -> list[Any]:
    """The functions and classes ``obj`` (a factory) carries: arguments first (deep enough
    for the DSL's fused chains: a partial of a list of partials of its steps)."""
    if depth < 0:
        return []
    if isinstance(obj, functools.partial):
        out: list[Any] = []
        for a in (*obj.args, *obj.keywords.values()):
            out += _carried(a, depth - 1)
        return out + _carried(obj.func, depth)
    if isinstance(obj, (list, tuple)):
        return [x for a in obj for x in _carried(a, depth - 1)]
    if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj):
        return [getattr(obj, "__func__", obj)]
    attrs = getattr(obj, "__dict__", None)
    if attrs is not None and not inspect.ismodule(obj):
        return [type(obj), *(x for v in attrs.values() for x in _carried(v, depth - 1))]
    return []


def index(entry: str) -> dict[str, Any]:
    """Load ``entry`` (here, in this process) and say what its package defines."""
    from ._loader import _load

    namespace: dict[str, Any] = {}
    topology = _load(entry, defined=namespace)
    root = Path(entry).resolve().parent
    defined: dict[str, list[dict[str, Any]]] = {}
    for c in topology.components:
        seen: list[dict[str, Any]] = []
        for obj in _carried(c.factory):
            at = _where(obj, root, entry)
            label = getattr(obj, "__name__", type(obj).__name__)
            row = {"file": at[0], "line": at[1], "name": label} if at else None
            if row and row not in seen:
                seen.append(row)
        defined[c.name] = seen
    return {"defined": defined, "palette": _palette(root, entry, namespace)}


def _palette(root: Path, entry: str, namespace: dict[str, Any]) -> list[dict[str, Any]]:
    stem = Path(entry).stem
    found: dict[str, Any] = {f"{stem}:{k}": v for k, v in namespace.items()}
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if file and Path(file).resolve().is_relative_to(root):
            found.update({f"{name}:{k}": v for k, v in vars(mod).items()})
    out: list[dict[str, Any]] = []
    for step, obj in sorted(found.items()):
        bolt = inspect.isclass(obj) and issubclass(obj, Bolt) and obj is not Bolt
        function = inspect.isfunction(obj) and not step.partition(":")[2].startswith("_")
        at = _where(obj, root, entry) if bolt or function else None
        module = step.partition(":")[0]
        if at is None or getattr(obj, "__module__", "") not in (module, "__main__"):
            continue  # not the package's, or imported from elsewhere
        takes = _required(obj)
        if takes is None or (bolt and takes) or (function and takes not in (1, 2)):
            continue  # a class that needs arguments; a function no step shape calls
        out.append(
            {
                "step": step,
                "kind": "bolt" if bolt else "function",
                "takes": takes,
                "name": obj.__qualname__,
                "file": at[0],
                "line": at[1],
                "doc": (inspect.getdoc(obj) or "").split("\n")[0][:200],
                "outputs": [str(s) for s in getattr(obj, "outputs", ()) or ()] if bolt else [],
            }
        )
    out = out[:MAX_PALETTE]
    for step, (_, doc) in PLATFORM_STEPS.items():
        out.append(
            {"step": step, "kind": "platform", "takes": 0, "name": step, "file": "", "line": 0}
            | {"doc": doc, "outputs": []}
        )
    return out


def _required(obj: Any) -> int | None:
    """How many arguments ``obj`` needs (None: it does not say)."""
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(
        1
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )


async def index_isolated(folder: Path, entry: str, limits: LoadLimits) -> dict[str, Any]:
    """``index`` of ``folder / entry``, in a child process under ``limits``; TopologyLoadError
    for a file that does not load (the reason says why)."""
    got = await run_bounded(_MODULE, [entry], None, limits, 4 << 20, cwd=folder)
    answer = got.answer
    if isinstance(answer, dict) and isinstance(answer.get("index"), dict):
        return answer["index"]  # type: ignore[no-any-return]
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        raise TopologyLoadError(answer["error"][:2000])
    if got.timed_out:
        raise TopologyLoadError(f"loading {entry} took longer than {limits.time_s:g} s")
    raise TopologyLoadError(
        f"the process loading {entry} ended without an answer (exit status {got.code})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}")
    parser.add_argument("entry")
    parser.add_argument("--memory", type=int, default=LOAD_MEMORY_BYTES)
    parser.add_argument("--parent", type=int, default=0)
    args = parser.parse_args(argv)
    out = child_start(args.memory, args.parent)
    try:
        child_answer(out, {"index": index(args.entry)})
    except TopologyLoadError as exc:
        child_answer(out, {"error": str(exc)})
    except BaseException as exc:  # whatever the file raises
        child_answer(out, {"error": f"loading {args.entry} failed: {type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
