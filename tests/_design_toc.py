"""docs/design.md's table of contents: every section by its anchor, and the decisions it names.

A decision is a heading (``##``, ``###``) or a paragraph or list item that starts with a
bold name (``**Placement on workers.**``); code and docs cite them by that name. The table
sits between the ``<!-- toc`` and ``<!-- /toc -->`` lines at the top of the file; each
section is a link to its heading's anchor (GitHub's rule), followed by the names of the
decisions in it. ``python -m tests._design_toc`` rewrites it after a section or a decision
is added; ``tests/test_docs.py`` checks it is current.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
BEGIN = "<!-- toc: `python -m tests._design_toc` writes this; each section, then its decisions -->"
END = "<!-- /toc -->"
_LEAD = re.compile(r"^(?:- )?\*\*(.+?)\*\*")


@dataclass
class Section:
    level: int  # 2 for ##, 3 for ###
    title: str
    anchor: str
    decisions: list[str] = field(default_factory=list)


def anchor(title: str, seen: dict[str, int]) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces to ``-``; a repeated one gets ``-1``, ``-2``..."""
    slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
    n = seen.get(slug, 0)
    seen[slug] = n + 1
    return slug if n == 0 else f"{slug}-{n}"


def sections(text: str) -> list[Section]:
    """The ``##`` and ``###`` sections of ``text`` (fenced code and the table skipped)."""
    out: list[Section] = []
    seen: dict[str, int] = {}
    fence = in_toc = False
    for line in text.splitlines():
        if line.startswith("<!-- toc"):
            in_toc = True
        elif line == END:
            in_toc = False
        if line.startswith("```"):
            fence = not fence
        if fence or in_toc:
            continue
        heading = re.match(r"^(#{1,6}) (.+)$", line)
        if heading:
            slug = anchor(heading[2], seen)
            if len(heading[1]) in (2, 3):
                out.append(Section(len(heading[1]), heading[2], slug))
        elif out and (lead := _LEAD.match(line)):
            out[-1].decisions.append(lead[1].strip().rstrip(".:").strip())
    return out


def toc(text: str) -> list[str]:
    """The table's lines, ``BEGIN`` and ``END`` included."""
    lines = [BEGIN]
    for s in sections(text):
        entry = f"{'  ' * (s.level - 2)}- [{s.title}](#{s.anchor})"
        lines.append(entry + (": " + " · ".join(s.decisions) if s.decisions else ""))
    return [*lines, END]


def current(text: str) -> list[str]:
    """The table as the file has it (empty when it has none)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("<!-- toc")]
    if not starts or END not in lines:
        return []
    return lines[starts[0] : lines.index(END) + 1]


def rewrite(path: Path = DESIGN) -> None:
    """Replace the table (or put one after the first paragraph under the title)."""
    text = path.read_text()
    lines = text.splitlines()
    old = current(text)
    if old:
        at = lines.index(old[0])
        lines[at : at + len(old)] = toc(text)
    else:
        at = lines.index("", lines.index("") + 1)  # the blank line after the intro
        lines[at:at] = ["", *toc(text)]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    rewrite()
