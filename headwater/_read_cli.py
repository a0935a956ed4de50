"""`headwater read PATH`: a sink's output as JSON lines, one row a line.

What PATH holds decides how it is read (or ``--format``):

- ``jsonl``: a ``TransactionalFileSink`` folder of ``part-<checkpoint>-<task>.jsonl``
  files (its committed rows, in checkpoint order), or one JSON-lines file;
- ``parquet``: the same sink's Parquet parts, or one Parquet file (a row as an object);
- ``landing``: a ``LandingSink`` dataset (a folder with ``_manifests/``): the rows of
  every published manifest, in order, partition columns last (as strings, a null key
  as null);
- ``kv``: a ``KeyValueSink`` folder of ``task-*`` RocksDB stores (or one of them): the
  latest row per key.

Every row prints as a JSON object of its columns. A file sink's JSON lines and a
key-value sink's rows are positional: their names come from the sink's ``_columns.json``
(the fields of the stream it reads); a row without names (a folder written before
sinks kept them, a row of another length) prints as a list, a key-value row then as
``{"key": ..., "value": [...]}``.

``--follow`` keeps reading a sink folder, a landing dataset or a JSON-lines file: rows
appear as their checkpoints commit (a file sink's and a landing zone's output is
visible only then); Ctrl-C ends it. Only committed output is read: hidden in-progress
and pending files are skipped, so a row is never printed twice.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import re
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from headwater._argtypes import whole
from headwater.common._exceptions import HeadwaterError

FORMATS = ("jsonl", "parquet", "landing", "kv")
POLL_S = 0.5
_PART = re.compile(r"^part-(\d+)-(\d+)\.(jsonl|parquet)$")
_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def add_parsers(sub: Any) -> None:
    read = sub.add_parser(
        "read",
        help="print a sink's output as JSON lines (file, Parquet, landing and key-value sinks)",
        description=(__doc__ or "").replace("``", "`").replace("`headwater read PATH`: a", "A"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    read.add_argument(
        "path",
        metavar="PATH",
        help="a sink's output: its folder (a file sink's, a landing dataset's, a key-value "
        "sink's) or one .jsonl or .parquet file",
    )
    read.add_argument(
        "--format",
        choices=("auto", *FORMATS),
        default="auto",
        help="how to read PATH (default: auto, from what is there)",
    )
    read.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep printing new rows as they are committed, until Ctrl-C "
        "(sink folders, landing datasets and JSON-lines files)",
    )
    read.add_argument(
        "--limit",
        type=whole(1),
        default=None,
        metavar="N",
        help="stop after N rows (by default, every row)",
    )
    read.set_defaults(func=_cmd_read)


def _cmd_read(args: argparse.Namespace) -> int:
    path = Path(args.path)
    kind = detect(path) if args.format == "auto" else args.format
    if args.follow and (kind == "kv" or (kind == "parquet" and path.is_file())):
        what = (
            "a key-value sink holds the latest row per key"
            if kind == "kv"
            else ("a Parquet file does not grow")
        )
        raise HeadwaterError(
            f"--follow reads sink folders, landing datasets and JSON-lines files; {what}"
        )
    rows = read_rows(path, kind, follow=args.follow)
    try:
        for row in itertools.islice(rows, args.limit):
            sys.stdout.write(json.dumps(plain(row), ensure_ascii=False) + "\n")
            if args.follow:
                sys.stdout.flush()
    except BaseException as exc:
        if _interrupted(exc):  # the way to end --follow: not an error
            return 0
        raise
    finally:
        rows.close()
    return 0


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C: a KeyboardInterrupt, or pyarrow's form of it when the signal lands inside one
    of its reads (``ArrowCancelled``, "received signal 2")."""
    arrow = sys.modules.get("pyarrow.lib")
    cancelled = getattr(arrow, "ArrowCancelled", None) if arrow is not None else None
    return isinstance(exc, KeyboardInterrupt) or (
        cancelled is not None and isinstance(exc, cancelled)
    )


# -- what is at PATH ----------------------------------------------------------------------
def detect(path: Path) -> str:
    """The kind of sink output at ``path``; a HeadwaterError that says why if none."""
    if not path.exists():
        raise HeadwaterError(f"{path}: no such file or folder")
    if path.is_file():
        if path.suffix == ".parquet" or _magic(path) == b"PAR1":
            return "parquet"
        return "jsonl"
    try:
        names = {p.name for p in path.iterdir()}
    except OSError as exc:
        raise HeadwaterError(f"{path}: {exc.strerror or exc}") from None
    if (path / "_manifests").is_dir():
        return "landing"
    if "CURRENT" in names or any(
        n.startswith("task-") and (path / n / "CURRENT").exists() for n in names
    ):
        return "kv"
    exts = {m.group(3) for n in names if (m := _PART.match(n.lstrip(".").removesuffix(".pending")))}
    exts |= {"jsonl" for n in names if n.startswith(".inprogress-") and n.endswith(".jsonl")}
    if len(exts) == 1:
        return exts.pop()
    datasets = sorted(n for n in names if (path / n / "_manifests").is_dir())
    if datasets:
        raise HeadwaterError(
            f"{path} is a landing zone of datasets {', '.join(datasets)}: read one, "
            f"e.g. headwater read {path / datasets[0]}"
        )
    raise HeadwaterError(
        f"{path} holds no sink output that headwater read knows (part-*.jsonl or "
        f"part-*.parquet files, a landing dataset's _manifests/, a key-value sink's task-* "
        f"stores); name one with --format to read it anyway"
    )


def _magic(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(4)
    except OSError as exc:
        raise HeadwaterError(f"{path}: {exc.strerror or exc}") from None


# -- readers ------------------------------------------------------------------------------
def read_rows(path: Path, kind: str, follow: bool = False) -> Generator[Any, None, None]:
    """The rows at ``path`` read as ``kind``; with ``follow``, new ones as they come."""
    if not path.exists() and not follow:
        raise HeadwaterError(f"{path}: no such file or folder")
    if kind == "kv":
        return _kv(path)
    if kind == "landing":
        return _landing(path, follow)
    if path.is_file():
        return _jsonl_file(path, follow) if kind == "jsonl" else _rows_of(path)
    return _parts(path, kind, follow)


def _rows_of(path: Path) -> Generator[Any, None, None]:
    yield from _parquet(path)


def read_columns(folder: Path) -> list[str] | None:
    """The names of a sink's positional rows, kept in its folder (None: none kept)."""
    from headwater.common.connectors._columns import read_columns

    return read_columns(folder)


def _named(columns: list[str] | None, row: Any) -> Any:
    """A positional row as an object of ``columns`` (as it is without, or of another length)."""
    if columns is None or not isinstance(row, list) or len(row) != len(columns):
        return row
    return dict(zip(columns, row, strict=True))


def _parts(folder: Path, ext: str, follow: bool) -> Generator[Any, None, None]:
    seen: set[str] = set()
    while True:
        try:
            names = [n for n in (p.name for p in folder.iterdir()) if n not in seen]
        except FileNotFoundError:
            names = []
        except OSError as exc:
            raise HeadwaterError(f"{folder}: {exc.strerror or exc}") from None
        new = sorted(
            (int(m.group(1)), int(m.group(2)), n)
            for n in names
            if (m := _PART.match(n)) and m.group(3) == ext
        )
        columns = read_columns(folder) if new and ext == "jsonl" else None
        for _, _, name in new:
            seen.add(name)
            if ext == "jsonl":
                yield from (_named(columns, row) for row in _jsonl_lines(folder / name))
            else:
                yield from _parquet(folder / name)
        if not follow:
            return
        time.sleep(POLL_S)


def _jsonl_lines(path: Path) -> Generator[Any, None, None]:
    try:
        text = path.read_text(encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise HeadwaterError(f"{path}: {exc.strerror or exc}") from None
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield _json(path, n, line)


def _json(path: Path, n: int, line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        raise HeadwaterError(
            f"{path}:{n}: not a JSON line: {line[:60]!r}; is it a JSON-lines file?"
        ) from None


def _jsonl_file(path: Path, follow: bool) -> Generator[Any, None, None]:
    """The file's lines; with ``follow``, lines appended later (as ``tail -f``)."""
    offset, n, rest = 0, 0, b""
    columns = read_columns(path.parent)
    while True:
        try:
            with path.open("rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        except OSError as exc:
            raise HeadwaterError(f"{path}: {exc.strerror or exc}") from None
        offset += len(chunk)
        *lines, rest = (rest + chunk).split(b"\n")
        if not follow and rest:  # a last line without its newline
            lines, rest = [*lines, rest], b""
        for raw in lines:
            n += 1
            line = raw.decode("utf-8", "backslashreplace")
            if line.strip():
                yield _named(columns, _json(path, n, line))
        if not follow:
            return
        columns = columns or read_columns(path.parent)
        time.sleep(POLL_S)


def _parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    except OSError as exc:
        raise HeadwaterError(f"{path}: {exc.strerror or exc}") from None
    except (pa.ArrowException, ValueError) as exc:
        raise HeadwaterError(f"{path}: not a readable Parquet file ({exc})") from None
    return rows


def _landing(folder: Path, follow: bool) -> Generator[dict[str, Any], None, None]:
    """Each published manifest's rows, in order (``common.connectors.manifests``)."""
    from headwater.common.connectors import manifests

    if not follow and not (folder / "_manifests").is_dir():
        raise HeadwaterError(f"{folder} is not a landing dataset (it has no _manifests/)")
    after = 0
    while True:
        try:
            docs = manifests(folder, after=after)
        except (OSError, ValueError) as exc:
            raise HeadwaterError(f"{folder}: unreadable manifest ({exc})") from None
        for doc in docs:
            after = doc["seq"]
            for entry in doc.get("files", []):
                rel = str(entry["path"])
                file = folder / rel
                if not file.exists():  # rolled back past a corrupt checkpoint since
                    print(f"headwater read: {file}: gone, skipped", file=sys.stderr)
                    continue
                keys = [seg.split("=", 1) for seg in Path(rel).parts[:-1] if "=" in seg]
                partition = {k: None if v == _NULL_PARTITION else unquote(v) for k, v in keys}
                for row in _parquet(file):
                    yield {**row, **partition}
        if not follow:
            return
        time.sleep(POLL_S)


def _kv(folder: Path) -> Generator[dict[str, Any], None, None]:
    from rocksdict import AccessType, Options, Rdict

    from headwater.common.wire import DecodeError, decode

    one = (folder / "CURRENT").exists()
    stores = [folder] if one else sorted(folder.glob("task-*"))
    columns = read_columns(folder.parent if one else folder)
    for store in stores:
        try:
            db = Rdict(str(store), Options(raw_mode=True), access_type=AccessType.read_only())
        except Exception as exc:  # rocksdict raises plain Exceptions
            raise HeadwaterError(f"{store}: not a readable key-value store ({exc})") from None
        try:
            for k, v in db.items():
                assert isinstance(k, bytes) and isinstance(v, bytes)  # raw mode
                try:
                    key, value = decode(k), decode(v)
                except DecodeError as exc:
                    raise HeadwaterError(
                        f"{store}: a row that is not a Headwater key-value sink's ({exc})"
                    ) from None
                if columns is not None and isinstance(value, list) and len(value) == len(columns):
                    yield dict(zip(columns, value, strict=True))
                else:
                    yield {"key": key, "value": value}
        finally:
            db.close()


# -- values as JSON -----------------------------------------------------------------------
def plain(value: Any) -> Any:
    """``value`` as JSON can hold it: bytes as text, tuples and sets as lists, times in ISO
    8601, keys as strings, anything else as its ``str``."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {
            k if isinstance(k, str) else json.dumps(plain(k)): plain(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return str(value)
