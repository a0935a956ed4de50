"""`headwater read PATH`: every sink's output as JSON lines, run as a user runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

from headwater import Topology
from headwater.common.api import Spout, Tuple, fields
from headwater.common.connectors import KeyValueSink, LandingSink, TransactionalFileSink
from headwater.testing import TestContext

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


class Source(Spout):
    def next_tuple(self) -> None:
        pass


def _topology(sink: Any) -> Topology:
    return (
        Topology("t")
        .add_spout("src", Source, outputs=("site", "seq", "ts"))
        .add_bolt("sink", sink, inputs={"src": fields("site")})
    )


def _row(site: str, seq: int) -> Tuple:
    return Tuple(None, "src", "default", 1, [site, seq, T0 + seq], 0.0)


def _file_sink(directory: Path, format: str) -> TransactionalFileSink:
    sink = TransactionalFileSink(directory, format=format)
    sink.open(TestContext(_topology(partial(TransactionalFileSink, directory)), "sink"))
    return sink


def _landing_sink(root: Path, dataset: str = "readings") -> LandingSink:
    factory = partial(LandingSink, root, dataset, event_time="ts", site="site")
    sink = factory()
    sink.open(TestContext(_topology(factory), "sink"))
    sink.on_restore(0)
    return sink


def _commit(sink: Any, checkpoint: int, *rows: Tuple) -> None:
    for r in rows:
        sink.process(r)
    sink.on_checkpoint(checkpoint)
    sink.on_commit(checkpoint)


def read(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", "read", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def lines(out: str) -> list[Any]:
    return [json.loads(line) for line in out.splitlines()]


def test_a_file_sink_folder_prints_its_committed_rows_in_order(tmp_path: Path) -> None:
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / fmt
        sink = _file_sink(out, fmt)
        _commit(sink, 1, _row("a", 1), _row("b", 2))
        _commit(sink, 2, _row("a", 3))
        sink.process(_row("c", 4))
        sink.on_checkpoint(3)  # sealed, not committed: not output yet
        sink.close()
        done = read(str(out))
        assert (done.returncode, done.stderr) == (0, ""), fmt
        # each row an object of the sink's columns (JSON lines keep them in _columns.json)
        assert done.stdout == (
            f'{{"site": "a", "seq": 1, "ts": {T0 + 1}}}\n'
            f'{{"site": "b", "seq": 2, "ts": {T0 + 2}}}\n'
            f'{{"site": "a", "seq": 3, "ts": {T0 + 3}}}\n'
        ), fmt
        want = lines(done.stdout)
        assert lines(read(str(out), "--limit", "2").stdout) == want[:2]
        part = next(out.glob("part-00000002-*"))
        assert lines(read(str(part)).stdout) == want[2:]  # one part file


def test_positional_rows_without_their_names_print_as_lists(tmp_path: Path) -> None:
    """A folder written before sinks kept their columns, or rows of another revision."""
    sink = _file_sink(tmp_path, "jsonl")
    _commit(sink, 1, _row("a", 1))
    sink.close()
    (tmp_path / "_columns.json").write_text('{"columns": ["site", "seq"]}')  # another length
    assert read(str(tmp_path)).stdout == f'["a", 1, {T0 + 1}]\n'
    (tmp_path / "_columns.json").unlink()
    assert read(str(tmp_path)).stdout == f'["a", 1, {T0 + 1}]\n'


def test_a_landing_dataset_prints_rows_with_their_partition_columns(tmp_path: Path) -> None:
    sink = _landing_sink(tmp_path)
    _commit(sink, 1, _row("s0", 1), _row("s1", 2))
    _commit(sink, 2, _row("s0", 3))
    done = read(str(tmp_path / "readings"))
    assert (done.returncode, done.stderr) == (0, "")
    assert lines(done.stdout) == [
        {"seq": 1, "ts": T0 + 1, "date": "2023-11-14", "site": "s0"},
        {"seq": 2, "ts": T0 + 2, "date": "2023-11-14", "site": "s1"},
        {"seq": 3, "ts": T0 + 3, "date": "2023-11-14", "site": "s0"},
    ]
    # the landing root holds datasets: the message names them
    _commit(_landing_sink(tmp_path, "windows"), 1, _row("s0", 9))
    done = read(str(tmp_path))
    assert done.returncode == 2
    assert done.stderr == (
        f"headwater: error: {tmp_path} is a landing zone of datasets readings, windows: "
        f"read one, e.g. headwater read {tmp_path / 'readings'}\n"
    )


def test_follow_prints_rows_as_they_commit_and_ctrl_c_ends_it(tmp_path: Path) -> None:
    sink = _landing_sink(tmp_path)
    _commit(sink, 1, _row("s0", 1))
    reader = subprocess.Popen(
        [sys.executable, "-m", "headwater", "read", "--follow", str(tmp_path / "readings")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None
        assert json.loads(reader.stdout.readline())["seq"] == 1
        sink.process(_row("s1", 2))
        sink.on_checkpoint(2)  # sealed only: nothing to print yet
        sink.on_commit(2)
        assert json.loads(reader.stdout.readline())["seq"] == 2
        reader.send_signal(signal.SIGINT)
        out, err = reader.communicate(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert (reader.returncode, out, err) == (0, "", "")


def test_follow_a_file_sink_from_before_its_first_commit(tmp_path: Path) -> None:
    """A sink folder with only an in-progress file is a JSON-lines sink with no rows yet;
    following it prints each checkpoint's rows once it commits."""
    out = tmp_path / "out"
    sink = _file_sink(out, "jsonl")
    sink.process(_row("a", 1))  # in progress: not output
    reader = subprocess.Popen(
        [sys.executable, "-m", "headwater", "read", "--follow", "--limit", "3", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        sink.on_checkpoint(1)
        sink.on_commit(1)
        _commit(sink, 2, _row("b", 2), _row("c", 3))
        out_text, err = reader.communicate(timeout=30)  # --limit 3 ends it
    finally:
        sink.close()
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert (reader.returncode, err) == (0, "")
    assert lines(out_text) == [
        {"site": site, "seq": seq, "ts": T0 + seq} for site, seq in (("a", 1), ("b", 2), ("c", 3))
    ]


def test_follow_a_json_lines_file_prints_appended_lines(tmp_path: Path) -> None:
    log = tmp_path / "out.jsonl"
    log.write_text('{"n": 1}\n')
    reader = subprocess.Popen(
        [sys.executable, "-m", "headwater", "read", "-f", "--limit", "2", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None
    assert reader.stdout.readline() == '{"n": 1}\n'
    with log.open("a") as f:
        f.write('{"n": 2}\n{"n": 3}\n')
    out, err = reader.communicate(timeout=30)  # --limit ends it
    assert (reader.returncode, out, err) == (0, '{"n": 2}\n', "")


def test_a_key_value_sink_prints_the_latest_row_per_key(tmp_path: Path) -> None:
    out = tmp_path / "kv"
    factory = partial(KeyValueSink, out, key="site")
    sink = factory()
    sink.open(TestContext(_topology(factory), "sink"))
    for r in (_row("s0", 1), _row("s1", 2), _row("s0", 3)):
        sink.process(r)
    sink.on_checkpoint(1)
    try:  # read beside the running writer, as while a topology runs
        done = read(str(out))
        assert (done.returncode, done.stderr) == (0, "")
        assert sorted(done.stdout.splitlines()) == [
            f'{{"site": "s0", "seq": 3, "ts": {T0 + 3}}}',
            f'{{"site": "s1", "seq": 2, "ts": {T0 + 2}}}',
        ]
        done = read(str(next(out.glob("task-*"))))  # one store: the names are in its folder
        assert (done.returncode, done.stderr) == (0, "")
        assert sorted(lines(done.stdout), key=lambda r: r["site"]) == [
            {"site": "s0", "seq": 3, "ts": T0 + 3},
            {"site": "s1", "seq": 2, "ts": T0 + 2},
        ]
        (out / "_columns.json").unlink()  # a store written before sinks kept their names
        assert sorted(lines(read(str(out)).stdout), key=lambda r: r["key"]) == [
            {"key": "s0", "value": ["s0", 3, T0 + 3]},
            {"key": "s1", "value": ["s1", 2, T0 + 2]},
        ]
        done = read("--follow", str(out))
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            "headwater: error: --follow reads sink folders, landing datasets and JSON-lines "
            "files; a key-value sink holds the latest row per key\n"
        )
    finally:
        sink.close()


def test_bad_paths_and_unreadable_data_say_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    sinkish = tmp_path / "sinkish"
    sinkish.mkdir()
    (sinkish / "part-00000001-1.jsonl").write_text("[1]\n{oops\n")
    cases = {
        str(tmp_path / "nope"): f"{tmp_path / 'nope'}: no such file or folder",
        str(tmp_path / "empty"): f"{tmp_path / 'empty'} holds no sink output that headwater "
        "read knows (part-*.jsonl or part-*.parquet files, a landing dataset's _manifests/, "
        "a key-value sink's task-* stores); name one with --format to read it anyway",
        str(tmp_path / "notes.txt"): f"{tmp_path / 'notes.txt'}:1: not a JSON line: 'hello'; "
        "is it a JSON-lines file?",
        str(sinkish): f"{sinkish / 'part-00000001-1.jsonl'}:2: not a JSON line: '{{oops'; "
        "is it a JSON-lines file?",
    }
    for path, message in cases.items():
        done = read(path)
        assert (done.returncode, done.stderr) == (2, f"headwater: error: {message}\n"), path
    done = read(str(tmp_path / "broken.parquet"))
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"headwater: error: {tmp_path / 'broken.parquet'}: not a readable Parquet file ("
    )
    done = read("--format", "kv", str(tmp_path / "empty"))  # no stores: no rows
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    done = read("--format", "landing", str(tmp_path / "empty"))
    assert (done.returncode, done.stderr) == (
        2,
        f"headwater: error: {tmp_path / 'empty'} is not a landing dataset (it has no "
        "_manifests/)\n",
    )
