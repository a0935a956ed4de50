"""Every documented example in the package runs as written.

Each module whose source holds an interactive example (``>>> ``) is found by walking the
package, so a module that gains examples is tested without being listed here."""

from __future__ import annotations

import doctest
import importlib
import os
from pathlib import Path

import pytest

import headwater

PACKAGE = Path(headwater.__file__).parent
# headwater/common, cloud and edge are links to the repository's top-level folders
SKIP = {"examples"}


def _modules_with_examples() -> list[str]:
    names = []
    paths = [
        Path(folder, file)
        for folder, _, files in os.walk(PACKAGE, followlinks=True)
        for file in files
        if file.endswith(".py")
    ]
    for path in sorted(paths):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in SKIP or ">>> " not in path.read_text(encoding="utf-8"):
            continue
        names.append(".".join(("headwater", *rel.with_suffix("").parts)).removesuffix(".__init__"))
    return names


MODULES = _modules_with_examples()


def test_the_walk_finds_the_examples() -> None:
    """The walk follows the linked folders (common, cloud, edge) and the package's own."""
    assert "headwater.common.dsl._windows" in MODULES
    assert "headwater.edge._orders" in MODULES
    assert "headwater.testing" in MODULES
    assert len(MODULES) >= 25


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_the_docs_run(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, report=True)
    assert result.failed == 0, f"{name}: {result.failed} of its examples failed (printed above)"
