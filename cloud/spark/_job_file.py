"""A user's Spark job file, loaded: ``run(spark, ctx)`` from a ``.py`` file, or a rollup spec.

The file is imported by path as a module of a unique name (its folder first on
``sys.path``, so it may import its neighbours), in the process that runs it: the
driver, a child of the worker, never the master. A file that does not import,
defines no ``run`` or a ``run`` that does not take two parameters is a
``JobFileError``: one line naming the file and what to do (the driver's exit
status 3). A ``.toml`` file is a rollup spec, run by ``_rollup_job.run_spec_job``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError

Job = Callable[[Any, Any], object]  # run(spark, ctx)


class JobFileError(HeadwaterError):
    """A job file that cannot be run: it does not import, or defines no ``run(spark, ctx)``."""


def load_job(path: Path) -> Job:
    """The job's ``run(spark, ctx)`` from ``path`` (``JobFileError`` if there is none)."""
    if path.suffix not in (".py", ".toml"):
        raise JobFileError(
            f"{path}: give a .py file defining run(spark, ctx), or a .toml rollup spec"
        )
    if not path.is_file():
        raise JobFileError(f"{path}: no such file")
    if path.suffix == ".toml":
        spec_file = path

        def run_spec(spark: Any, ctx: Any) -> object:
            module = importlib.import_module("headwater.cloud.spark._rollup_job")
            return module.run_spec_job(spark, ctx, spec_file)

        return run_spec
    module = _import(path)
    run = getattr(module, "run", None)
    if run is None or not callable(run):
        raise JobFileError(
            f"{path} defines no run(spark, ctx): a job file defines the function the driver "
            "calls with the Spark session and the job's context"
        )
    try:
        inspect.signature(run).bind(None, None)
    except TypeError:
        raise JobFileError(
            f"{path}: run{inspect.signature(run)} does not take two parameters: "
            "define run(spark, ctx)"
        ) from None
    except ValueError:  # no signature to inspect (a builtin): let the call say
        pass
    return run  # type: ignore[no-any-return]


def _import(path: Path) -> Any:
    real = path.resolve()
    stem = re.sub(r"\W", "_", path.stem)
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:12]
    name = f"headwater_job_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, real)
    if spec is None or spec.loader is None:
        raise JobFileError(f"{path}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    folder = str(real.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        sys.modules.pop(name, None)
        raise JobFileError(
            f"{path} does not import: SyntaxError: {e.msg} (line {e.lineno})"
        ) from None
    except (Exception, SystemExit) as e:
        sys.modules.pop(name, None)
        line = _line_in(e, real)
        first = (str(e).strip().splitlines() or [""])[0]
        raise JobFileError(
            f"{path} does not import: {type(e).__name__}"
            f"{f': {first}' if first else ''}{f' (line {line})' if line else ''}"
        ) from None
    return module


def _line_in(exc: BaseException, path: Path) -> int | None:
    """The line of ``path`` where ``exc`` passed last, if it did."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return frames[-1].lineno if frames else None
