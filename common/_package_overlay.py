"""A package's files as the console shows and edits them: a listing, and an overlay edit.

``package_listing`` gives each file of a (checked) package with its text when it is UTF-8
text of at most ``MAX_SHOWN_BYTES`` (else ``text`` is None and ``why`` says "binary" or
"too large", as it does for every file past ``MAX_LISTED_BYTES`` of text in all).
``overlay_package`` makes a new package from a running one and a few files changed
(``{"path": "new text"}``) or deleted (``{"path": None}``): the paths follow the package's
own rules (relative, no ``..``, no backslash), each new text is at most
``MAX_EDIT_FILE_BYTES``, and the result is checked as any uploaded package is.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import Any

from ._exceptions import PackageRefusedError
from ._package import check_package, entry_problem, package_files, zip_package

MAX_SHOWN_BYTES = 256 << 10
"""The largest file whose text the listing carries."""
MAX_LISTED_BYTES = 8 << 20
"""The most text one listing carries in all (the files past it are listed without)."""
MAX_EDIT_FILE_BYTES = 1 << 20
"""The largest text an overlay edit may set one file to."""
MAX_EDIT_FILES = 100
"""The most files one overlay edit may change."""


def package_listing(data: bytes) -> list[dict[str, Any]]:
    """``[{path, size, text, why}]`` of a checked package, sorted by path; a file too large
    to show is never read (a package unpacks to 256 MiB: each listing would hold it all)."""
    out: list[dict[str, Any]] = []
    listed = 0
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = sorted((i for i in zf.infolist() if not i.filename.endswith("/")), key=_name)
        for info in infos:
            text: str | None = None
            why, size = "", info.file_size
            if size > MAX_SHOWN_BYTES or listed + size > MAX_LISTED_BYTES:
                why = "too large"
            else:
                try:
                    text = zf.read(info).decode("utf-8")
                except UnicodeDecodeError:
                    why = "binary"
                if text is not None and "\0" in text:
                    text, why = None, "binary"
                listed += size if text is not None else 0
            out.append({"path": info.filename, "size": size, "text": text, "why": why})
    return out


def _name(info: zipfile.ZipInfo) -> str:
    return info.filename


def overlay_problem(changes: Any) -> str | None:
    """Why ``changes`` is not ``{path: text or None}`` within the bounds, or None."""
    if not isinstance(changes, dict) or not changes:
        return 'send {"files": {"PATH": "new text" or null}} with at least one file'
    if len(changes) > MAX_EDIT_FILES:
        return f"an edit changes at most {MAX_EDIT_FILES} files, not {len(changes)}"
    for path, text in changes.items():
        problem = entry_problem(path) if isinstance(path, str) else "paths are strings"
        if problem is not None:
            return problem
        if text is not None and not isinstance(text, str):
            return f"{path[:80]!r}: give the file's new text as a string, or null to delete it"
        if text is not None and len(text.encode("utf-8", "surrogatepass")) > MAX_EDIT_FILE_BYTES:
            return f"{path[:80]!r} is over {MAX_EDIT_FILE_BYTES >> 20} MiB: upload a zip instead"
    return None


def overlay_package(data: bytes, changes: Mapping[str, str | None]) -> bytes:
    """``data`` (a checked package) with ``changes`` applied; PackageRefusedError for changes
    out of bounds, a deletion of a file it does not have, or a result that is no package."""
    problem = overlay_problem(changes)
    if problem is not None:
        raise PackageRefusedError(problem)
    files = package_files(data)
    for path, text in changes.items():
        if text is None:
            if path not in files:
                raise PackageRefusedError(f"the package has no file {path[:80]!r} to delete")
            del files[path]
        else:
            try:
                files[path] = text.encode("utf-8")
            except UnicodeEncodeError:
                raise PackageRefusedError(f"{path[:80]!r}: not valid UTF-8 text") from None
    if not files:
        raise PackageRefusedError("the edit would leave the package without a file")
    out = zip_package(files)
    check_package(out)
    return out
