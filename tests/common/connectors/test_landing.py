"""headwater.common.connectors._landing: the landing zone sink and its readers."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater import Topology
from headwater.common.api import Spout, Tuple, shuffle
from headwater.common.connectors import LandingSink, manifests, read_landing
from headwater.common.connectors._landing_commits import LandingCommits
from headwater.testing import TestContext

FIELDS = ("site", "sensor", "seq", "ts", "value", "flag", "note")
DAY = 86_400_000
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


class Source(Spout):
    def next_tuple(self) -> None:
        pass


def make_sink(root: Path, index: int = 0, **kwargs: Any) -> LandingSink:
    """The sink as task ``index + 2`` of two (task 1 is the source)."""
    kwargs = {"event_time": "ts", "site": "site", **kwargs}
    topology = (
        Topology("t")
        .add_spout("src", Source, outputs=FIELDS)
        .add_bolt(
            "sink",
            partial(LandingSink, root, "readings", **kwargs),
            inputs={"src": shuffle()},
            parallelism=2,
        )
    )
    sink = LandingSink(root, "readings", **kwargs)
    sink.open(TestContext(topology, "sink", index=index))
    assert sink.task == index + 2
    return sink


def tup(site: str, seq: int, ts: int, note: Any = None, sensor: str = "a") -> Tuple:
    return Tuple(None, "src", "default", 1, [site, sensor, seq, ts, seq / 2, seq % 2 == 0, note], 0)


def files(root: Path) -> list[str]:
    """Every file under the dataset, hidden ones included, relative."""
    d = root / "readings"
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


def published(root: Path) -> list[str]:
    return [f for f in files(root) if not f.startswith("_") and "/." not in f]


def stripped(ms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for m in ms:
        assert isinstance(m.pop("committed_at"), float)
    return ms


def test_layout_manifest_and_rows(tmp_path: Path) -> None:
    sink = make_sink(tmp_path)
    sink.on_restore(0)
    sink.process(tup("site0", 1, T0))
    sink.process(tup("site1", 2, T0 + 1))
    sink.process(tup("site0", 3, T0 + DAY, note="x"))
    assert published(tmp_path) == []
    sink.on_checkpoint(1)
    assert published(tmp_path) == []  # sealed, hidden
    sink.process(tup("site0", 4, T0 + 2 * DAY))  # the next checkpoint's
    sink.on_commit(1)
    assert published(tmp_path) == [
        "date=2023-11-14/site=site0/part-00000001-2.parquet",
        "date=2023-11-14/site=site1/part-00000001-2.parquet",
        "date=2023-11-15/site=site0/part-00000001-2.parquet",
    ]
    assert files(tmp_path) == ["_manifests/000000000001.json", "_schema.json", *published(tmp_path)]
    assert stripped(manifests(tmp_path, "readings")) == [
        {
            "seq": 1,
            "checkpoint": 1,
            "task": 2,
            "files": [
                {"path": "date=2023-11-14/site=site0/part-00000001-2.parquet", "rows": 1},
                {"path": "date=2023-11-14/site=site1/part-00000001-2.parquet", "rows": 1},
                {"path": "date=2023-11-15/site=site0/part-00000001-2.parquet", "rows": 1},
            ],
            "rows": 3,
            "event_time": {"min": T0, "max": T0 + DAY},
        }
    ]
    # partition columns live in the path only; types fixed per column
    table = pq.read_table(tmp_path / "readings" / published(tmp_path)[0])
    assert table.schema == pa.schema(
        [
            ("sensor", pa.string()),
            ("seq", pa.int64()),
            ("ts", pa.int64()),
            ("value", pa.float64()),
            ("flag", pa.bool_()),
            ("note", pa.string()),
        ]
    )
    rows = sorted(read_landing(tmp_path, "readings"), key=lambda r: r["seq"])
    assert rows == [
        {"sensor": "a", "seq": 1, "ts": T0, "value": 0.5, "flag": False, "note": None}
        | {"date": "2023-11-14", "site": "site0"},
        {"sensor": "a", "seq": 2, "ts": T0 + 1, "value": 1.0, "flag": True, "note": None}
        | {"date": "2023-11-14", "site": "site1"},
        {"sensor": "a", "seq": 3, "ts": T0 + DAY, "value": 1.5, "flag": False, "note": "x"}
        | {"date": "2023-11-15", "site": "site0"},
    ]
    sink.on_checkpoint(2)
    sink.on_checkpoint(3)  # empty: no file, no manifest
    sink.on_commit(3)
    assert [m["seq"] for m in manifests(tmp_path, "readings")] == [1, 2]
    assert [m["checkpoint"] for m in manifests(tmp_path / "readings", after=1)] == [2]
    assert len(read_landing(tmp_path, "readings")) == 4


def test_a_none_and_later_values_keep_the_schema(tmp_path: Path) -> None:
    sink = make_sink(tmp_path)
    sink.on_restore(0)
    sink.process(tup("site0", 1, T0, note=None))  # note: only None so far -> string
    sink.on_checkpoint(1)
    sink.process(tup("site0", 2, T0, note=[1, b"\xff"]))  # not a scalar: JSON text
    sink.process(Tuple(None, "src", "default", 1, ["site0", None, None, T0, 3, None, 7], 0))
    sink.on_checkpoint(2)
    sink.on_commit(2)
    schemas = {pq.read_schema(tmp_path / "readings" / f) for f in published(tmp_path)}
    assert len(schemas) == 1
    rows = sorted(read_landing(tmp_path, "readings"), key=lambda r: r["seq"] or 0)
    assert [(r["seq"], r["value"], r["flag"], r["note"]) for r in rows] == [
        (None, 3.0, None, "7"),  # an int in a double column is a double
        (1, 0.5, False, None),
        (2, 1.0, True, '[1, "\\\\xff"]'),
    ]
    # a later sink (a restart) keeps the dataset's types
    again = make_sink(tmp_path, index=1)
    again.on_restore(2)
    with pytest.raises(ValueError, match="column 'seq' holds int64, got 'x'"):
        again.process(Tuple(None, "src", "default", 1, ["site0", "a", "x", T0, 1.0, True, ""], 0))
    assert json.loads((tmp_path / "readings" / "_schema.json").read_text())["columns"] == {
        "sensor": "string",
        "seq": "int64",
        "ts": "int64",
        "value": "double",
        "flag": "bool",
        "note": "string",
    }


def test_rollback_deletes_what_it_undoes(tmp_path: Path) -> None:
    crashed = make_sink(tmp_path)
    crashed.on_restore(0)
    crashed.process(tup("site0", 1, T0))
    crashed.on_checkpoint(1)  # sealed, complete, but the commit never arrived
    crashed.process(tup("site0", 2, T0))
    crashed.process(tup("site1", 3, T0 + DAY))
    crashed.on_checkpoint(2)  # sealed, never completed
    crashed.process(tup("site0", 4, T0))  # in memory: lost with the process
    # a published part of a checkpoint past the restored one (after a fallback)
    late = tmp_path / "readings" / "date=2023-11-16" / "site=site0"
    late.mkdir(parents=True)
    (late / "part-00000003-2.parquet").write_bytes(b"x")
    # another task's files are not ours to touch
    (late / ".part-00000002-3.parquet.pending").write_bytes(b"o")
    (late / "part-00000005-3.parquet").write_bytes(b"o")

    sink = make_sink(tmp_path)
    sink.on_restore(1)
    assert files(tmp_path) == [
        "_manifests/000000000001.json",
        "_schema.json",
        "date=2023-11-14/site=site0/part-00000001-2.parquet",
        "date=2023-11-16/site=site0/.part-00000002-3.parquet.pending",
        "date=2023-11-16/site=site0/part-00000005-3.parquet",
    ]
    assert [(m["checkpoint"], m["rows"]) for m in manifests(tmp_path, "readings")] == [(1, 1)]
    # the replay lands the rolled-back rows once
    sink.process(tup("site0", 2, T0))
    sink.on_checkpoint(2)
    sink.on_commit(2)
    (late / "part-00000005-3.parquet").unlink()
    assert sorted(r["seq"] for r in read_landing(tmp_path, "readings")) == [1, 2]
    assert [m["seq"] for m in manifests(tmp_path, "readings")] == [1, 2]


class Crash(Exception):
    pass


@pytest.mark.parametrize("where", ["_write_manifest", "_forget"])
def test_a_crash_between_rename_and_manifest_publishes_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Killed after the renames (before the manifest, or after it but before the cleanup):
    the restore publishes the manifest exactly once."""
    crashed = make_sink(tmp_path)
    crashed.on_restore(0)
    crashed.process(tup("site0", 1, T0))
    crashed.process(tup("site1", 2, T0))
    crashed.on_checkpoint(1)

    def crash(*args: Any) -> None:
        raise Crash

    with monkeypatch.context() as m:
        m.setattr(LandingCommits, where, crash)
        with pytest.raises(Crash):
            crashed.on_commit(1)
    assert len(published(tmp_path)) == 2
    assert len(manifests(tmp_path, "readings")) == (1 if where == "_forget" else 0)

    for _ in range(2):  # restore twice: still once
        sink = make_sink(tmp_path)
        sink.on_restore(1)
    ms = manifests(tmp_path, "readings")
    assert [(m["seq"], m["checkpoint"], m["task"], m["rows"]) for m in ms] == [(1, 1, 2, 2)]
    assert [f for f in files(tmp_path) if f.startswith("_manifests/")] == [
        "_manifests/000000000001.json"
    ]


def _commit_many(root: Path, index: int, checkpoints: int, start: Any) -> None:
    sink = make_sink(root, index=index)
    sink.on_restore(0)
    start.wait(30)
    for c in range(1, checkpoints + 1):
        sink.process(tup(f"site{index}", c, T0 + c))
        sink.on_checkpoint(c)
        sink.on_commit(c)


def test_two_tasks_in_two_processes_get_distinct_contiguous_seqs(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_commit_many, args=(tmp_path, i, 60, start)) for i in (0, 1)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    ms = manifests(tmp_path, "readings")
    assert [m["seq"] for m in ms] == list(range(1, 121))
    assert sorted((m["task"], m["checkpoint"]) for m in ms) == [
        (t, c) for t in (2, 3) for c in range(1, 61)
    ]
    assert sum(m["rows"] for m in ms) == len(read_landing(tmp_path, "readings")) == 120


def test_no_event_time_extra_keys_and_a_given_schema(tmp_path: Path) -> None:
    schema = pa.schema([("seq", pa.int32()), ("ts", pa.int64()), ("value", pa.float32())])
    schema = schema.append(pa.field("flag", pa.bool_())).append(pa.field("note", pa.string()))
    sink = make_sink(tmp_path, event_time=None, partition_by=["sensor"], schema=schema)
    sink.on_restore(0)
    sink.process(tup("site/0", 1, T0, sensor="a b"))
    sink.process(tup(None, 2, T0))  # type: ignore[arg-type]
    sink.on_checkpoint(1)
    sink.on_commit(1)
    assert published(tmp_path) == [
        "date=__HIVE_DEFAULT_PARTITION__/site=__HIVE_DEFAULT_PARTITION__/sensor=a/"
        "part-00000001-2.parquet",
        "date=__HIVE_DEFAULT_PARTITION__/site=site%2F0/sensor=a%20b/part-00000001-2.parquet",
    ]
    assert pq.read_schema(tmp_path / "readings" / published(tmp_path)[0]) == schema
    assert not (tmp_path / "readings" / "_schema.json").exists()
    rows = sorted(read_landing(tmp_path, "readings"), key=lambda r: r["seq"])
    assert [(r["date"], r["site"], r["sensor"], r["seq"]) for r in rows] == [
        (None, "site/0", "a b", 1),
        (None, None, "a", 2),
    ]
    assert manifests(tmp_path, "readings")[0]["event_time"] == {"min": None, "max": None}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dataset": "_x"}, "dataset must be a folder name"),
        ({"dataset": "a/b"}, "dataset must be a folder name"),
        ({"event_time": 5}, "event_time must be a column name or a function"),
        ({"site": ""}, "site must be a column name"),
        ({"partition_by": "sensor"}, "partition_by must be a list of column names"),
        ({"partition_by": ["site"], "site": "site"}, "partition columns repeat"),
        ({"partition_by": ["ts"], "event_time": "ts"}, "event_time 'ts' cannot be a partition"),
        ({"schema": {"a": 1}}, "schema must be a pyarrow.Schema"),
    ],
)
def test_bad_arguments_say_what_is_wrong(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    args = {"root": tmp_path, "dataset": "readings", **kwargs}
    with pytest.raises(ValueError, match=message):
        LandingSink(**args)


def test_unknown_columns_fail_at_open(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\['region'\] not among the input fields"):
        make_sink(tmp_path, partition_by=["region"])
    with pytest.raises(
        ValueError, match=r"schema lacks columns \['seq', 'ts', 'value', 'flag', 'note'\]"
    ):
        make_sink(tmp_path, schema=pa.schema([("sensor", pa.string())]))


def test_spark_reads_the_dataset_with_partition_discovery(tmp_path: Path) -> None:
    sink = make_sink(tmp_path)
    sink.on_restore(0)
    for i in range(6):
        sink.process(tup(f"site{i % 2}", i, T0 + i * DAY // 2, note="n"))
    sink.on_checkpoint(1)
    sink.process(tup("site0", 99, T0))  # sealed later: not published, not read
    sink.on_checkpoint(2)
    sink.on_commit(1)
    # in a process of its own: the JVM ends with it
    script = f"""
import json
from headwater.cloud.spark import session
spark = session("test-landing")
df = spark.read.parquet({str(tmp_path / "readings")!r})
rows = sorted((r.seq, str(r.date), r.site) for r in df.collect())
print(json.dumps({{"columns": df.columns, "rows": rows}}))
spark.stop()
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=240, check=True
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["columns"] == ["sensor", "seq", "ts", "value", "flag", "note", "date", "site"]
    assert got["rows"] == [
        [0, "2023-11-14", "site0"],
        [1, "2023-11-15", "site1"],
        [2, "2023-11-15", "site0"],
        [3, "2023-11-16", "site1"],
        [4, "2023-11-16", "site0"],
        [5, "2023-11-17", "site1"],
    ]
