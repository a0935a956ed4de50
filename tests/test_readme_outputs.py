"""What the docs' commands write under the repository's root is ignored by git and Docker.

A newcomer runs the README's and docs/'s commands (every ```sh block of README.md and of
``docs/**/*.md``) from a fresh clone's root: the IoT example writes ``iot-out/``,
the live-edit example ``editable-out/``, the Spark loop ``warehouse/`` and the trained
model, the shop example ``shop-out/`` (its landing and warehouse). None of it may show up
in ``git status`` or travel in the compose image's build context (the root, filtered by
``.dockerignore``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# flags whose value is a path a command writes (or reads from what a topology wrote)
_OUTPUT_FLAGS = ("--out", "--warehouse", "--checkpoint", "--landing", "--workdir")


def _commands() -> list[str]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "\n".join(f.read_text() for f in files)
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)
    return [line.split("#", 1)[0].strip() for b in blocks for line in b.splitlines()]


def readme_outputs() -> set[str]:
    """The top-level names under the current folder that the docs' commands write:
    the values of output flags and the paths ``headwater read`` reads (a topology's output)."""
    out: set[str] = set()
    for cmd in _commands():
        words = cmd.split()
        paths = [words[i + 1] for i, w in enumerate(words[:-1]) if w in _OUTPUT_FLAGS]
        if words[:2] == ["headwater", "read"]:
            paths.append(next(w for w in words[2:] if not w.startswith("-")))
        for path in paths:
            if path.startswith(("/", "$", "~")):
                continue  # not under the current folder
            out.add(Path(path).parts[0] if Path(path).parts[0] != "." else Path(path).parts[1])
    return out


def _docker_ignored(path: str) -> bool:
    """Whether ``.dockerignore`` leaves ``path`` (relative to the root) out of the build
    context, by Docker's rules: ``*`` within a segment, ``**`` across, a matched folder's
    contents go with it, the last matching pattern (``!`` re-includes) wins."""
    ignored = False
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = "".join(
            ".*"
            if part == "**"
            else "[^/]*"
            if part == "*"
            else "[^/]"
            if part == "?"
            else re.escape(part)
            for part in re.split(r"(\*\*|\*|\?)", pattern)
        )
        if re.fullmatch(rf"{regex}(/.*)?", path):
            ignored = not negate
    return ignored


def test_the_readme_names_its_outputs() -> None:
    # if a command is added that writes elsewhere, this list (and both ignore files) grow
    assert readme_outputs() == {
        *("iot-out", "editable-out", "warehouse", "iot-anomaly.json"),
        "shop-out",  # the shop example's landing and warehouse
    }


@pytest.mark.parametrize("name", sorted(readme_outputs()))
def test_each_output_is_ignored_by_git_and_docker(name: str) -> None:
    git = shutil.which("git")
    assert git is not None, "the tests run in a git checkout, with git installed"
    # a file the folder holds (git matches `/iot-out/` to folders only), or the file itself
    held = name if "." in name else f"{name}/part-1-0.jsonl"
    found = subprocess.run([git, "check-ignore", "--no-index", "-q", held], cwd=ROOT, check=False)
    assert found.returncode == 0, f"git does not ignore {held} (add it to .gitignore)"
    for path in (name, held):
        assert _docker_ignored(path), f"the Docker build context holds {path} (.dockerignore)"


def test_the_docker_matcher_follows_dockers_rules() -> None:
    assert _docker_ignored("tests/test_x.py")  # a folder's contents
    assert _docker_ignored("common/__pycache__/x.pyc")  # **/
    assert not _docker_ignored("common/console/_snapshot.py")
    assert not _docker_ignored("README.md")
