"""``headwater spark train`` (the IoT example's ``examples/iot/anomaly_train.py``, run by the
platform's command), and the same file as a Spark job: real MLlib on landed history; figures
checked against the held-out split; the artifact loads and scores in a Python that cannot
import pyspark.

The landing is written by ``land_history`` (the contract's layout, with pyarrow,
from the example's generator and the hand-set detector's own functions): one
function, so a landing made by real agents can take its place.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater import _train_cli
from headwater._demo.sensors import readings
from headwater._master_client import Client
from headwater._train_cli import add_train_parser
from headwater.cloud.spark._job_file import load_job_file
from headwater.common._exceptions import HeadwaterError
from headwater.common.models import dump_model, load_model, sha256
from headwater.models import Registry
from headwater.spark import JobContext
from tests.cloud.test_rest_auth import master  # noqa: F401  (the fixture)

from ..._iot import anomaly_train, iot_steps
from ..._workers import one_worker
from ._spark import GATEWAY_SOCKET, spark_fixture
from ._train_check import assert_evaluation, held_out

pytestmark = [pytest.mark.timeout(600), GATEWAY_SOCKET, one_worker(__name__)]

SITES, PER_SITE, COUNT = 2, 2, 1000  # 4 sensors x 1000 readings
HOLDOUT = 0.25
REPO = Path(__file__).resolve().parents[3]


def land_history(
    root: Path,
    sites: int = SITES,
    per_site: int = PER_SITE,
    count: int = COUNT,
    seqs_per_commit: int = 250,
) -> Path:
    """The IoT example's ``readings`` landed under ``root`` (contract layout), as the edge
    would flag them with the hand-set detector; a commit (a file per partition, a manifest
    each) for every ``seqs_per_commit`` readings of each sensor (the demo commits every
    second: 2 seqs at its default speed-up)."""
    state: dict[str, Any] = defaultdict(lambda: [None, None])
    parts: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    for _topic, r in readings(sites, per_site, count):
        row = [r["site"], r["sensor"], r["seq"], r["ts"], float(r["value"])]
        s = state[r["sensor"]]
        s[0], [row] = iot_steps.smooth(s[0], row)
        s[1], [row] = iot_steps.anomaly(s[1], row)
        date = datetime.datetime.fromtimestamp(r["ts"] / 1000, datetime.UTC).date().isoformat()
        checkpoint = 1 + r["seq"] // seqs_per_commit
        parts[(date, r["site"], checkpoint)].append(
            {
                "sensor": row[1],
                "seq": row[2],
                "ts": row[3],
                "value": row[4],
                "smoothed": row[5],
                "anomaly": row[6],
                "model": "",
            }
        )
    schema = pa.schema(
        [
            ("sensor", pa.string()),
            ("seq", pa.int64()),
            ("ts", pa.int64()),
            ("value", pa.float64()),
            ("smoothed", pa.float64()),
            ("anomaly", pa.bool_()),
            ("model", pa.string()),
        ]
    )
    dataset = root / "readings"
    (dataset / "_manifests").mkdir(parents=True)
    for n, ((date, site, checkpoint), rows) in enumerate(sorted(parts.items()), 1):
        rel = f"date={date}/site={site}/part-{checkpoint:08d}-0.parquet"
        (dataset / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema), dataset / rel)
        ts = [r["ts"] for r in rows]
        manifest = {
            "seq": n,
            "checkpoint": checkpoint,
            "task": 0,
            "files": [{"path": rel, "rows": len(rows)}],
            "rows": len(rows),
            "event_time": {"min": min(ts), "max": max(ts)},
            "committed_at": 0,
        }
        (dataset / "_manifests" / f"{n:012d}.json").write_text(json.dumps(manifest))
    # an in-progress file, as a sink leaves it before its checkpoint completes: ignored
    (dataset / f"date={date}/site=site0/.part-99999999-0.parquet").write_bytes(b"partial")
    return root


spark = spark_fixture("headwater-test-train", "module")


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return land_history(tmp_path_factory.mktemp("landing"))


def cli(*argv: str) -> tuple[int, str, str]:
    """``headwater spark train ARGV`` in this process, as the CLI's main runs it: (exit code,
    stdout, stderr); a ``HeadwaterError`` is a message and exit 2."""
    p = argparse.ArgumentParser(prog="headwater spark")
    add_train_parser(p.add_subparsers())
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = p.parse_args(["train", *argv])
            code = args.func(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except HeadwaterError as exc:
            print(f"error: {exc}", file=sys.stderr)
            code = 2
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def trained(spark: Any, landing: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    artifact = tmp_path_factory.mktemp("model") / "iot-anomaly.json"
    code, out, err = cli("--landing", str(landing), "--out", str(artifact), "--holdout", "0.25")
    assert code == 0, out + err
    return artifact.read_bytes(), out, err


@pytest.fixture(scope="module")
def doc(trained: Any) -> dict[str, Any]:
    return load_model(trained[0]).doc


def test_the_figures_are_those_of_the_artifact_on_the_held_out_split(
    doc: dict[str, Any], landing: Path
) -> None:
    assert_evaluation(doc, landing, HOLDOUT, SITES * PER_SITE * COUNT)


def test_the_model_beats_the_hand_set_detector_on_the_example(doc: dict[str, Any]) -> None:
    model, handset = doc["evaluation"]["model"], doc["evaluation"]["handset"]
    assert model["tp"] + model["fn"] > 20  # the held-out split has anomalies to find
    assert model["f1"] > handset["f1"]
    assert model["recall"] > handset["recall"]
    assert model["precision"] >= 0.9


BLOCKER = """
import sys
class NoSpark:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j", "numpy"):
            raise ImportError(f"{name} is blocked: the artifact must load without it")
        return None
sys.meta_path.insert(0, NoSpark())
import json
from headwater.common.models import load_model
model = load_model(open(sys.argv[1], "rb").read())
cases = json.load(open(sys.argv[2]))
print(json.dumps([model.flag(s, p, v) for s, p, v in cases]))
try:
    import pyspark
except ImportError:
    print("no pyspark")
assert not any(m.split(".")[0] in ("pyspark", "py4j", "numpy") for m in sys.modules)
"""


def test_the_artifact_loads_and_scores_without_spark(
    doc: dict[str, Any], landing: Path, tmp_path: Path
) -> None:
    data = dump_model(doc)
    artifact = tmp_path / "model.json"
    artifact.write_bytes(data)
    test = [r for r in held_out(landing, HOLDOUT) if r["test"]]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([[r["sensor"], r["prev"], r["value"]] for r in test]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK"))}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run(
        [sys.executable, "-c", BLOCKER, str(artifact), str(cases)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    model = load_model(data)
    assert json.loads(out[0]) == [model.flag(r["sensor"], r["prev"], r["value"]) for r in test]
    assert out[1] == "no pyspark"
    assert sha256(data) == sha256(artifact.read_bytes())


def test_the_cli_prints_the_figures(trained: Any, doc: dict[str, Any]) -> None:
    data, out, _ = trained
    ev = doc["evaluation"]
    lines = out.splitlines()
    assert lines[0].startswith(f"trained iot-anomaly (gated-linear/1) on {doc['trained']['rows']} ")
    m, h = ev["model"], ev["handset"]
    assert lines[3].split() == [
        "model",
        str(m["rows"]),
        f"{m['precision']:.3f}",
        f"{m['recall']:.3f}",
        f"{m['f1']:.3f}",
        str(m["tp"]),
        str(m["fp"]),
        str(m["fn"]),
    ]
    assert lines[4].split()[:2] == ["hand-set", str(h["rows"])]
    assert lines[5] == f"artifact: {len(data)} bytes, sha256 {sha256(data)}"
    assert data == dump_model(doc)  # canonical bytes


def test_the_cli_tells_its_stages_on_stderr(trained: Any, doc: dict[str, Any]) -> None:
    """Each stage as it starts, then its rows and time, the time in all and what is left."""
    data, _, err = trained
    ended = [
        ("1/5", "starting Spark", r"in [\d.]+ (s|min) \(Spark [\d.]+, local\[2\]\)"),
        ("2/5", "reading the landing", rf"{SITES * PER_SITE * COUNT:,} rows in [\d.]+ (s|min)"),
        (
            "3/5",
            "fitting",
            rf"{doc['trained']['rows']:,} rows in [\d.]+ (s|min) "
            rf"\({SITES * PER_SITE} sensors of their own\)",
        ),
        ("4/5", "evaluating", rf"{doc['evaluation']['test_rows']:,} rows in [\d.]+ (s|min)"),
        ("5/5", "exporting", rf"in [\d.]+ (s|min) \({len(data)} bytes to \S+iot-anomaly.json\)"),
    ]
    lines = [line for line in err.splitlines() if "still running" not in line]
    assert len(lines) == 2 * len(ended), err
    for (n, name, figures), started, done in zip(ended, lines[::2], lines[1::2], strict=True):
        assert started == f"[{n}] {name} ...", err
        # an estimate while weight is left (exporting weighs nothing: none after evaluating)
        # (the test's session is running already: starting it may take too little to tell)
        left = r", about [\d.]+ (s|min) left" if n in ("2/5", "3/5") else ""
        left = r"(, about [\d.]+ (s|min) left)?" if n == "1/5" else left
        all_ = r"[\d.]+ (s|min) in all"
        assert re.fullmatch(rf"\[{n}\] {name}: {figures} \({all_}{left}\)", done), done


def test_too_little_history_is_a_message_and_exit_2(spark: Any, tmp_path: Path) -> None:
    small = land_history(tmp_path / "small", sites=1, per_site=1, count=40)
    out = str(tmp_path / "m.json")
    code, _, err = cli("--landing", str(small), "--out", out)
    assert code == 2 and "at least 50 are needed" in err and "Traceback" not in err
    assert not Path(out).exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--landing", "{nowhere}", "--out", "{out}"], "no readings/ dataset there"),
        (["--landing", "{empty}", "--out", "{out}"], "has no committed file yet"),
        (["--landing", "{empty}"], "give --out FILE, --master URL"),
        (["--landing", "{empty}", "--out", "{out}", "--holdout", "1.5"], "strictly between"),
        (["--landing", "{empty}", "--out", "{out}", "--name", "../x"], "--name '../x'"),
        (["--landing", "{empty}", "--out", "{out}", "--labels", "nope"], "MODULE:FUNCTION"),
        (["--landing", "{empty}", "--out", "/no/such/dir/m.json"], "no folder"),
        (["--landing", "{empty}", "--out", "{out}", "--holdout", "x"], "invalid float value"),
        (["--out", "{out}"], "the following arguments are required: --landing"),
        (["--landing", "{empty}", "--master", "http://127.0.0.1:9"], "needs an admin token"),
    ],
)
def test_bad_arguments_are_a_message_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("HEADWATER_MASTER", "HEADWATER_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "empty"
    (empty / "readings" / "date=2024-01-01" / "site=a").mkdir(parents=True)
    (empty / "readings" / "date=2024-01-01" / "site=a" / ".part-1-0.parquet").write_bytes(b"")
    paths = {"nowhere": tmp_path / "nowhere", "empty": empty, "out": tmp_path / "m.json"}
    code, _, err = cli(*(a.format(**paths) for a in argv))
    assert code == 2 and message in err, err
    assert "Traceback" not in err


def test_labels_name_a_function_of_the_readings_fields() -> None:
    load_labels = anomaly_train.load_labels
    assert load_labels("headwater._demo.sensors:injected").fields == ("site", "seq")
    with pytest.raises(HeadwaterError, match="MODULE:FUNCTION"):
        load_labels("injected")
    with pytest.raises(HeadwaterError, match="cannot import"):
        load_labels("no_such_module_x:f")
    with pytest.raises(HeadwaterError, match="has no 'nope'"):
        load_labels("headwater._demo.sensors:nope")
    with pytest.raises(HeadwaterError, match="parameters must be some of"):
        load_labels("headwater._demo.sensors:readings")


def test_the_command_runs_the_examples_file_with_its_defaults() -> None:
    """The command loads the example's training by path, as the tests import it (one module),
    and its help names the file's defaults."""
    job = load_job_file(_train_cli.JOB, _train_cli.JOB_NAMES)
    assert job is anomaly_train
    assert _train_cli.JOB.resolve() == (REPO / "examples/iot/anomaly_train.py").resolve()
    assert (_train_cli.DEFAULT_NAME, _train_cli.DEFAULT_LABELS) == (
        job.MODEL,
        job.DEFAULT_LABELS,
    )


def test_the_training_is_a_job_too(
    spark: Any, landing: Path, doc: dict[str, Any], tmp_path: Path
) -> None:
    """``run(spark, ctx)`` on ``ctx.landing``: the artifact at ``out``, the very parameters
    and figures the command got (created_at aside); without ``out``, a message."""
    ctx = JobContext(
        spark,
        name="train",
        landing=landing,
        warehouse=tmp_path / "warehouse",
        checkpoint=tmp_path / "checkpoint",
        params={"out": str(tmp_path / "m.json"), "holdout": str(HOLDOUT)},
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        anomaly_train.run(spark, ctx)
    got = load_model((tmp_path / "m.json").read_bytes()).doc
    assert {**got, "created_at": 0} == {**doc, "created_at": 0}
    assert ctx.counts.read == SITES * PER_SITE * COUNT
    assert out.getvalue().splitlines()[-1].startswith(f"wrote {tmp_path / 'm.json'}: iot-anomaly ")
    ctx.params.pop("out")
    with pytest.raises(HeadwaterError, match="out=FILE"):
        anomaly_train.run(spark, ctx)


def test_the_job_and_the_command_register_with_a_master(
    spark: Any,
    landing: Path,
    doc: dict[str, Any],
    tmp_path: Path,
    master: dict[str, Any],  # noqa: F811
) -> None:
    """Run with a master (``ctx.registry``), the job registers the artifact (no file) with
    its metadata: the dataset, the training range, the held-out figures, the flag's range;
    ``headwater spark train --master`` registers the same way, after the same figures."""
    admin = (master["state"] / "admin.token").read_text().strip()
    ctx = JobContext(
        spark,
        name="train",
        landing=landing,
        warehouse=tmp_path / "warehouse",
        checkpoint=tmp_path / "checkpoint",
        params={"holdout": str(HOLDOUT)},
        registry=Registry(master["http"], admin),
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        anomaly_train.run(spark, ctx)
    lines = out.getvalue().splitlines()
    got = Client(master["http"], admin).call("GET", "/api/v1/models/iot-anomaly/1")
    assert lines[-2].startswith("trained: iot-anomaly on ")
    assert lines[-1] == f"registered iot-anomaly version 1 (sha256 {got['sha256']})"
    assert got["kind"] == doc["kind"]
    trained, model = doc["trained"], doc["evaluation"]["model"]
    assert got["metadata"] == {
        "dataset": "readings",
        "data_range": {k: trained[k] for k in ("from_ts", "to_ts", "rows", "sensors")},
        "evaluation": {k: model[k] for k in ("rows", "precision", "recall", "f1")},
        "output_range": [0.0, 1.0],
    }

    code, text, err = cli("--landing", str(landing), "--master", master["http"], "--token", admin)
    assert code == 0, text + err
    got = Client(master["http"], admin).call("GET", "/api/v1/models/iot-anomaly/2")
    assert text.startswith("trained iot-anomaly (gated-linear/1) on ") and "registering" in err
    assert text.splitlines()[-1] == f"registered iot-anomaly version 2 (sha256 {got['sha256']})"
    assert got["metadata"] == anomaly_train.registry_meta(got)  # its trained and evaluation
