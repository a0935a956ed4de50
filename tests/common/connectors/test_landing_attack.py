"""The landing sink given odd partition values and event times (issue 16).

A value the dataset cannot hold is refused by ``process`` (the runtime sends
the row to the dead letters with the reason), before anything of it is kept:
never at the seal, where it would fail the whole checkpoint on every replay.
Nothing escapes the dataset folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headwater.common.api import Tuple
from headwater.common.connectors import manifests, read_landing

from .test_landing import T0, files, make_sink, published, tup


def test_odd_site_names_stay_inside_the_dataset_and_read_back(tmp_path: Path) -> None:
    root = tmp_path / "landing"
    sink = make_sink(root)
    sink.on_restore(0)
    odd = ["a/b", "..", ".", "x=y", "../../etc", "a\x00b", "%2F", " "]
    for seq, site in enumerate(odd, 1):
        sink.process(tup(site, seq, T0))
    sink.on_checkpoint(1)
    sink.on_commit(1)
    every = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all((root / "readings") in p.parents for p in every)
    assert sorted(p.parent.name for p in every if p.suffix == ".parquet") == sorted(
        ["site=a%2Fb", "site=..", "site=.", "site=x%3Dy", "site=..%2F..%2Fetc", "site=a%00b",
         "site=%252F", "site=%20"]
    )  # fmt: skip
    rows = sorted(read_landing(root, "readings"), key=lambda r: r["seq"])
    assert [r["site"] for r in rows] == odd
    assert manifests(root, "readings")[0]["rows"] == len(odd)


@pytest.mark.parametrize(
    ("site", "ts", "says"),
    [
        ("s" * 300, T0, "partition site value 'sss"),
        (
            "é" * 60,
            T0,
            r"is 360 characters as a folder name \(escaped\); a folder name is at most 250",
        ),
        ("s", float("nan"), "event time nan is not epoch ms of a day in years 1 to 9999"),
        ("s", float("inf"), "event time inf is not epoch ms"),
        ("s", -(10**17), "is not epoch ms of a day in years 1 to 9999"),
        ("s", 300_000_000_000_000, "is not epoch ms of a day in years 1 to 9999"),
    ],
)
def test_a_row_the_dataset_cannot_hold_is_refused_before_the_seal(
    tmp_path: Path, site: str, ts: float, says: str
) -> None:
    sink = make_sink(tmp_path, event_time=lambda row: row["value"])  # a double column
    sink.on_restore(0)
    sink.process(Tuple(None, "src", "default", 1, ["site0", "a", 1, T0, float(T0), True, None], 0))
    bad = Tuple(None, "src", "default", 1, [site, "b", 2, T0, ts, True, [1]], 0)
    with pytest.raises(ValueError, match=says):
        sink.process(bad)
    sink.on_checkpoint(1)  # the seal goes on: only the good row
    sink.on_commit(1)
    assert published(tmp_path) == ["date=2023-11-14/site=site0/part-00000001-2.parquet"]
    assert [r["seq"] for r in read_landing(tmp_path, "readings")] == [1]


def test_a_refused_row_does_not_fix_the_column_types(tmp_path: Path) -> None:
    """The first row's values fix each column's type; a row refused for its partition must
    not (its 'x' would make seq a string column and every later int JSON text)."""
    sink = make_sink(tmp_path)
    sink.on_restore(0)
    first = Tuple(None, "src", "default", 1, ["s" * 300, "a", "x", T0, "v", "f", None], 0)
    with pytest.raises(ValueError, match="as a folder name"):
        sink.process(first)
    sink.process(tup("site0", 7, T0))
    sink.on_checkpoint(1)
    sink.on_commit(1)
    columns = json.loads((tmp_path / "readings" / "_schema.json").read_text())["columns"]
    assert (columns["seq"], columns["value"], columns["flag"]) == ("int64", "double", "bool")
    assert [r["seq"] for r in read_landing(tmp_path, "readings")] == [7]
    assert "_schema.json" in files(tmp_path)
