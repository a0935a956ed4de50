"""The documents stay usable: a short README, an index of every doc, design decisions by name.

The README is the front door (the two first commands, a tour, links) and stays short; each
topic is a file under docs/, every one listed in docs/index.md; docs/design.md's table of
contents names every section and decision, and every citation of a decision by name
(``docs/design.md, "Placement on workers"``) finds one. Relative links resolve.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ._design_toc import DESIGN, anchor, current, sections, toc

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
INDEX = DOCS / "index.md"
MAX_README_LINES = 200


def _docs() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _links(path: Path) -> list[str]:
    """The targets of ``[text](target)`` links outside fenced code."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {anchor(h, seen) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_the_readme_stays_short() -> None:
    lines = len(README.read_text().splitlines())
    assert lines < MAX_README_LINES, (
        f"README.md has {lines} lines: a topic belongs in docs/ (listed in docs/index.md)"
    )


def test_the_readme_starts_with_the_two_commands() -> None:
    first = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].strip() for line in first] == [
        "pip install -e '.[cloud]' && headwater demo",
        "scripts/install-system-deps && pip install -e '.[dev]' && scripts/test",
    ]
    assert "(docs/index.md)" in README.read_text()


def test_every_doc_is_in_the_index() -> None:
    linked = {(INDEX.parent / t.split("#")[0]).resolve() for t in _links(INDEX)}
    absent = [p.relative_to(ROOT).as_posix() for p in _docs() if p != INDEX and p not in linked]
    assert not absent, f"docs/index.md lists no line for: {absent}"


def test_every_relative_link_resolves() -> None:
    broken = []
    for doc in [README, *_docs()]:
        for target in _links(doc):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto
            file, _, frag = target.partition("#")
            dest = (doc.parent / file).resolve() if file else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
            elif frag and dest.suffix == ".md" and frag not in _anchors(dest):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_the_design_table_of_contents_is_current() -> None:
    text = DESIGN.read_text()
    assert current(text) == toc(text), (
        "docs/design.md's table of contents is stale: run `python -m tests._design_toc`"
    )
    anchors = _anchors(DESIGN)
    for section in sections(text):
        assert section.anchor in anchors, section.title


def _names() -> list[str]:
    names = []
    for section in sections(DESIGN.read_text()):
        names += [section.title, *section.decisions]
    return [n.replace("`", "") for n in names]


def test_every_citation_of_a_decision_finds_it() -> None:
    """A name quoted after docs/design.md anywhere in the repository (``, "..."`` or
    ``("...")``; a comment or docstring may wrap it) starts a section's title or a
    decision's name."""
    names = _names()
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    missing = []
    for name in files:
        path = ROOT / name
        if path.suffix not in (".md", ".py", ".toml") or not path.is_file():
            continue
        flat = re.sub(r"\n\s*(?:#+\s*)?", " ", path.read_text(errors="replace"))
        for cited in re.findall(r'design\.md`?,? \(?"([^"]{3,120})"', flat):
            if not any(n.startswith(cited.replace("`", "")) for n in names):
                missing.append(f"{name}: {cited!r}")
    assert not missing, f"citations of docs/design.md that name no decision: {missing}"
