"""A Spark job's file loaded as a module: by its path, its folder first on ``sys.path``.

A job is a Python file (``run(spark, ctx)``, see ``_job``) that may import the files
beside it by name, as a topology file imports its steps (``examples/iot``'s files
do). ``load_job_file`` puts the file's folder first on ``sys.path`` (and leaves it
there once the file loads: the job's functions may import a sibling later) and
imports the file under its own name, so that the job and its siblings import it as
one module; a module of that name already imported from elsewhere is an error, not
a silent mix.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from headwater.common._exceptions import HeadwaterError


def load_job_file(path: str | Path, needs: Sequence[str] = ("run",)) -> ModuleType:
    """The module of the job file ``path``; ``HeadwaterError`` if it is not there, does not
    import, or lacks one of the names ``needs``."""
    file = Path(path).resolve()
    if not file.is_file() or file.suffix != ".py":
        raise HeadwaterError(f"no job file at {str(path)!r}: give a Python file")
    name = file.stem
    if not name.isidentifier():
        raise HeadwaterError(f"{file.name}: a job file's name must be a Python module name")
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != file:
        raise HeadwaterError(
            f"{file}: a module named {name!r} is imported already, from "
            f"{getattr(loaded, '__file__', None) or 'elsewhere'}: rename the job file"
        )
    folder, before = str(file.parent), sys.path[:]
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    try:
        module = loaded or importlib.import_module(name)
    except BaseException as exc:
        sys.path[:] = before  # a file that does not load leaves nothing behind
        if isinstance(exc, HeadwaterError) or not isinstance(exc, Exception):
            raise
        raise HeadwaterError(f"{file} raised {type(exc).__name__} while loading: {exc}") from exc
    missing = [n for n in needs if not hasattr(module, n)]
    if missing:
        if loaded is None:  # not a job: leave nothing behind
            sys.path[:] = before
            sys.modules.pop(name, None)
        raise HeadwaterError(f"{file} defines no {', '.join(missing)}")
    return module
