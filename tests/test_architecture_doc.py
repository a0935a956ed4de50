"""docs/architecture.md matches the code: what it names exists, and every module is named.

The module map is a newcomer's first read; a map that names a module that moved, or
leaves out one that was added, misleads. This test reads the backticked names.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# packages whose inner modules the map names as a whole (their folder is named)
WHOLE = ("headwater/heronpy/", "headwater/_demo/", "common/wire/proto/")


def _ticked() -> list[str]:
    return re.findall(r"`([^`\n]+)`", DOC.read_text())


def _modules() -> list[Path]:
    out = []
    for top in ("common", "cloud", "edge", "headwater"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if path.name in ("__init__.py", "__main__.py") or rel.startswith(WHOLE):
                continue
            if top == "headwater" and rel.split("/")[1] in ("common", "cloud", "edge", "examples"):
                continue  # the symlinks to the top-level folders
            out.append(path)
    return out


def test_every_path_it_names_exists() -> None:
    missing = []
    for token in _ticked():
        if re.fullmatch(r"[\w./*-]+/[\w.*-]*", token) and ("/" in token):
            if token.startswith(("../", "http")) or token.startswith("/"):
                continue
            if not (list(ROOT.glob(token)) if "*" in token else (ROOT / token).exists()):
                missing.append(token)
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_module_is_in_the_map() -> None:
    names = set()
    for token in _ticked():
        for part in re.split(r"[\s,()]+", token):
            names.add(part.rsplit("/", 1)[-1].removesuffix(".py"))
    absent = [m.relative_to(ROOT).as_posix() for m in _modules() if m.stem not in names]
    assert not absent, f"modules docs/architecture.md does not name: {absent}"
