"""What a rollup rolls up: a dataset, its event time, groups of keys, measures, grains.

A spec is a small TOML file (or the same given as ``headwater spark rollup`` options)::

    dataset = "orders"
    time = "ts"                # event time: epoch ms (BIGINT; time_unit s / ms / us) or TIMESTAMP
    watermark = "10 minutes"   # how late a row may land and still count

    [grains]                   # a table per grain and group: <grain>_<group>
    hourly = "1 hour"
    daily = "1 day"

    [groups]                   # the key columns of a group's rows
    shop = ["region", "shop"]
    region = ["region"]

    [measures]                 # an output column per aggregate
    orders = "count"
    revenue = "sum(amount)"
    p95 = "quantile(amount, 0.95)"
    refunds = "count_if(refunded)"

Measures: ``count``, ``count(col)`` (non-null), ``sum``, ``mean``, ``min``, ``max``,
``stddev`` (sample) of a numeric column, ``quantile(col, q)`` (approximate, 0 <= q <= 1),
``count_if(col)`` and ``rate_if(col)`` (its share of the rows) of a boolean column.
``check`` holds a spec against a dataset's columns (``_datasets.Layout``): a
missing column or a wrong type is a ``SpecError`` naming the columns there are.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError

from ._datasets import Layout

INTERVAL = re.compile(r"^\d+ (second|minute|hour|day|week)s?$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MEASURE = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*([^,()\s]+)\s*(?:,\s*([0-9.]+)\s*)?\))?\s*$")
NUMERIC = {"BIGINT", "INT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT"}
FUNCTIONS = {  # name -> (takes a column, what the column must be)
    "count": (False, None),
    "sum": (True, "numeric"),
    "mean": (True, "numeric"),
    "min": (True, "numeric"),
    "max": (True, "numeric"),
    "stddev": (True, "numeric"),
    "quantile": (True, "numeric"),
    "count_if": (True, "boolean"),
    "rate_if": (True, "boolean"),
}
TIME_UNITS = ("s", "ms", "us")
RESERVED = {"window_start", "window_end", "date"}  # the columns every rollup table has
MAX_TABLES = 64
MAX_MEASURES = 256
MAX_KEYS = 32
"""The most key columns of one group."""


class SpecError(HeadwaterError):
    """A rollup spec that cannot be run, and why."""


@dataclass(frozen=True)
class Measure:
    """One output column: ``fn`` over ``column`` (None for ``count``); ``q`` for quantile."""

    name: str
    fn: str
    column: str | None = None
    q: float | None = None


@dataclass(frozen=True)
class RollupSpec:
    dataset: str
    time: str
    grains: dict[str, str]  # name -> window length ("1 hour")
    groups: dict[str, tuple[str, ...]]  # name -> key columns
    measures: tuple[Measure, ...]
    watermark: str = "10 minutes"
    time_unit: str = "ms"

    def tables(self) -> list[str]:
        return [f"{g}_{k}" for g in self.grains for k in self.groups]

    def keys(self) -> list[str]:
        """Every key column, each once, in the order the groups name them."""
        return list(dict.fromkeys(c for cols in self.groups.values() for c in cols))

    def fingerprint(self) -> str:
        """A hash of what the query computes (a changed spec cannot reuse its checkpoint)."""
        doc = {k: v for k, v in asdict(self).items() if k != "watermark"}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def parse_measure(name: str, text: str) -> Measure:
    """``"sum(amount)"`` as the measure ``name``; ``SpecError`` saying what is allowed."""
    if not isinstance(text, str) or not (m := _MEASURE.match(text)):
        raise SpecError(f"measure {name!r} = {text!r}: write e.g. 'sum(amount)' or 'count'")
    fn, column, q = m.group(1), m.group(2), m.group(3)
    if fn not in FUNCTIONS:
        raise SpecError(f"measure {name!r}: no aggregate {fn!r}; use one of {', '.join(FUNCTIONS)}")
    takes = FUNCTIONS[fn][0]
    if fn == "count" and column is not None:
        takes = True
    if takes and column is None:
        raise SpecError(f"measure {name!r}: {fn} needs a column, e.g. {fn}(amount)")
    if not takes and column is not None:
        raise SpecError(f"measure {name!r}: {fn} takes no column")
    if (q is not None) != (fn == "quantile"):
        raise SpecError(
            f"measure {name!r}: quantile takes a column and a fraction, e.g. "
            "quantile(amount, 0.95); the others no fraction"
        )
    qv = None
    if q is not None:
        try:
            qv = float(q)
        except ValueError:
            qv = -1.0  # "1.2.3": not a number
        if not 0.0 <= qv <= 1.0:
            raise SpecError(f"measure {name!r}: the quantile must be from 0 to 1, got {q!r}")
    return Measure(name, fn, column, qv)


def build(doc: dict[str, Any], where: str = "the spec") -> RollupSpec:
    """A spec from its TOML document (or the options as one); ``SpecError`` for what is wrong."""
    unknown = set(doc) - {
        "dataset", "time", "time_unit", "watermark", "grains", "groups", "measures",
    }  # fmt: skip
    if unknown:
        raise SpecError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    for key in ("dataset", "time", "grains", "groups", "measures"):
        if not doc.get(key):
            raise SpecError(f"{where}: no {key!r}; a spec names dataset, time, grains, groups "
                            "and measures (see `headwater spark rollup --help`)")  # fmt: skip
    dataset, time = doc["dataset"], doc["time"]
    if not isinstance(dataset, str) or not isinstance(time, str):
        raise SpecError(f"{where}: dataset and time are names (strings)")
    unit = doc.get("time_unit", "ms")
    if unit not in TIME_UNITS:
        raise SpecError(f"{where}: time_unit must be one of {', '.join(TIME_UNITS)}, got {unit!r}")
    watermark = doc.get("watermark", "10 minutes")
    if not isinstance(watermark, str) or not INTERVAL.fullmatch(watermark):
        raise SpecError(f"{where}: watermark {watermark!r}: write e.g. '10 minutes'")
    grains = _table(doc["grains"], "grains", where)
    hidden = [g for g in grains if g.startswith("_")]  # CHECKPOINT/_driver, _spec.json: not
    if hidden:
        raise SpecError(f"{where}: grain {hidden[0]!r}: a grain's name starts with a letter")
    for name, length in grains.items():
        if not isinstance(length, str) or not INTERVAL.fullmatch(length):
            raise SpecError(f"{where}: grain {name!r} = {length!r}: write e.g. '1 hour', '1 day'")
    groups_doc = _table(doc["groups"], "groups", where)
    groups: dict[str, tuple[str, ...]] = {}
    for name, given in groups_doc.items():
        cols = [given] if isinstance(given, str) else given
        if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
            raise SpecError(f'{where}: group {name!r} must list key columns, e.g. ["site"]')
        if len(cols) > MAX_KEYS:
            raise SpecError(
                f"{where}: group {name!r} has {len(cols)} key columns; at most {MAX_KEYS}"
            )
        if len(set(cols)) != len(cols):
            raise SpecError(f"{where}: group {name!r} names a column twice")
        groups[name] = tuple(cols)
    measures_doc = _table(doc["measures"], "measures", where)
    if len(measures_doc) > MAX_MEASURES:
        raise SpecError(f"{where}: {len(measures_doc)} measures; at most {MAX_MEASURES}")
    measures = tuple(parse_measure(n, t) for n, t in measures_doc.items())
    if len(grains) * len(groups) > MAX_TABLES:
        raise SpecError(f"{where}: {len(grains) * len(groups)} tables; at most {MAX_TABLES}")
    clash = RESERVED.intersection(m.name for m in measures) | (
        {m.name for m in measures} & {c for cols in groups.values() for c in cols}
    )
    if clash:
        raise SpecError(
            f"{where}: {', '.join(sorted(clash))} would name two columns of a table "
            "(window_start, window_end, date and the keys are every table's)"
        )
    return RollupSpec(dataset, time, grains, groups, measures, watermark, unit)


def _table(value: Any, key: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise SpecError(f"{where}: {key!r} must be a table of name = value")
    bad = [k for k in value if not _NAME.fullmatch(k)][:5]
    if bad:
        raise SpecError(
            f"{where}: {key} names {', '.join(map(repr, bad))}: letters, digits and '_', "
            "not starting with a digit"
        )
    return dict(value)


def load(path: Path) -> RollupSpec:
    """The spec in the TOML file ``path``."""
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError(f"--spec {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"--spec {path}: cannot read it ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"--spec {path}: not TOML: {exc}") from None
    except RecursionError:
        raise SpecError(f"--spec {path}: not TOML: nested too deep") from None
    return build(doc, f"--spec {path}")


def check(spec: RollupSpec, layout: Layout) -> None:
    """``SpecError`` unless every column ``spec`` names is in ``layout``, of the right type."""
    types = {**layout.columns, **dict.fromkeys(layout.partitions, "STRING")}
    there = ", ".join(f"{c} ({t.lower()})" for c, t in types.items())

    def need(column: str, what: str) -> str:
        if column not in types:
            raise SpecError(
                f"dataset {spec.dataset!r} has no column {column!r} ({what}); its columns: {there}"
            )
        return types[column]

    kind = need(spec.time, "the event time")
    if kind not in ("BIGINT", "INT", "TIMESTAMP"):
        raise SpecError(
            f"the event time {spec.time!r} is {kind.lower()}: give an epoch column (bigint, "
            "with time_unit) or a timestamp"
        )
    for group, cols in spec.groups.items():
        for c in cols:
            need(c, f"a key of group {group!r}")
    for m in spec.measures:
        if m.column is None:
            continue
        kind = need(m.column, f"measure {m.name!r}")
        want = FUNCTIONS[m.fn][1]
        if m.fn == "count":
            continue
        if want == "numeric" and kind not in NUMERIC:
            raise SpecError(f"measure {m.name!r}: {m.fn} needs a number; {m.column!r} is "
                            f"{kind.lower()}")  # fmt: skip
        if want == "boolean" and kind != "BOOLEAN":
            raise SpecError(f"measure {m.name!r}: {m.fn} needs a boolean column; {m.column!r} "
                            f"is {kind.lower()}")  # fmt: skip
