"""Rollups of any dataset by spec: the spec checked before Spark starts, and a dataset that is
not the IoT example's rolled up exactly (against an offline recomputation)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater._cli import main
from headwater.cloud.spark._datasets import DatasetError, Landing
from headwater.cloud.spark._rollup import claim_checkpoint
from headwater.cloud.spark._rollup_spec import SpecError, build, check, load
from headwater.cloud.spark._warehouse import read_table

from ._landing import Lander
from ._rollup_check import IOT_SPEC, REPO

ORDERS = {"shop": pa.string(), "amount": pa.float64(), "refunded": pa.bool_(), "ts": pa.int64()}
HOUR = 3_600_000
BASE = 1_700_000_000_000 // HOUR * HOUR
CENTS = Decimal("1e-12")
SPEC = {
    "dataset": "orders",
    "time": "ts",
    "grains": {"hourly": "1 hour"},
    "groups": {"shop": ["site", "shop"], "site": ["site"]},
    "measures": {
        "n": "count",
        "revenue": "sum(amount)",
        "avg": "mean(amount)",
        "lo": "min(amount)",
        "hi": "max(amount)",
        "sd": "stddev(amount)",
        "med": "quantile(amount, 0.5)",
        "refunds": "count_if(refunded)",
        "refund_rate": "rate_if(refunded)",
    },
}


def orders(first: int, n: int) -> list[dict[str, Any]]:
    """Orders ``first..first+n-1``: two sites, three shops each, 20 minutes apart per shop."""
    rows = []
    for i in range(first, first + n):
        site = f"site{i % 2}"
        rows.append(
            {
                "site": site,
                "shop": f"{site}-shop{i % 3}",
                "amount": round(10 + (i * 7919 % 1000) / 37, 2),
                "refunded": i % 11 == 3,
                "ts": BASE + (i // 6) * 1_200_000,
            }
        )
    return rows


def offline(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple[Any, ...], Any]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((*(r[k] for k in keys), r["ts"] // HOUR * HOUR), []).append(r)
    out = {}
    for key, rs in groups.items():
        amounts = [r["amount"] for r in rs]
        refunds = sum(r["refunded"] for r in rs)
        total = float(sum(Decimal(repr(a)).quantize(CENTS) for a in amounts))
        out[key] = {
            "n": len(rs),
            "revenue": total,
            "avg": total / len(rs),
            "lo": min(amounts),
            "hi": max(amounts),
            "sd": statistics.stdev(amounts) if len(rs) > 1 else None,
            "refunds": refunds,
            "refund_rate": refunds / len(rs),
        }
    return out


def test_the_iot_examples_spec_reads_as_its_four_tables() -> None:
    spec = load(IOT_SPEC)
    assert spec.tables() == ["hourly_sensor", "hourly_site", "daily_sensor", "daily_site"]
    assert [m.name for m in spec.measures] == [
        "count", "sum", "mean", "min", "max", "stddev", "p95", "anomalies", "anomaly_rate",
    ]  # fmt: skip
    assert spec.keys() == ["site", "sensor"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"measures": {"x": "median(amount)"}}, "no aggregate 'median'; use one of count, sum"),
        ({"measures": {"x": "sum"}}, "sum needs a column, e.g. sum(amount)"),
        ({"measures": {"x": "quantile(amount, 1.5)"}}, "the quantile must be from 0 to 1"),
        ({"measures": {"x": "quantile(amount)"}}, "quantile takes a column and a fraction"),
        ({"measures": {"x": "sum(amount"}}, "write e.g. 'sum(amount)' or 'count'"),
        ({"grains": {"hourly": "an hour"}}, "grain 'hourly' = 'an hour': write e.g. '1 hour'"),
        ({"groups": {"g": []}}, "group 'g' must list key columns"),
        ({"measures": {"date": "count"}}, "date would name two columns of a table"),
        ({"time": None}, "no 'time'; a spec names dataset, time, grains, groups and measures"),
        ({"colour": "red"}, "unknown keys colour"),
        ({"watermark": "late"}, "watermark 'late': write e.g. '10 minutes'"),
    ],
)
def test_a_bad_spec_says_what_is_wrong(change: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecError, match=None) as err:
        build({**SPEC, **change})
    assert says in str(err.value)


def _landed(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    Lander(tmp_path / "landing", "orders", ORDERS).land(rows)
    return tmp_path / "landing"


def test_a_spec_is_held_against_the_datasets_columns(tmp_path: Path) -> None:
    layout = Landing(_landed(tmp_path, orders(0, 12))).layout("orders")
    assert layout.partitions == ("date", "site")
    check(build(SPEC), layout)
    with pytest.raises(SpecError, match=r"no column 'price' \(measure 'x'\); its columns: shop"):
        check(build({**SPEC, "measures": {"x": "sum(price)"}}), layout)
    with pytest.raises(SpecError, match="count_if needs a boolean column; 'amount' is double"):
        check(build({**SPEC, "measures": {"x": "count_if(amount)"}}), layout)
    with pytest.raises(SpecError, match="sum needs a number; 'shop' is string"):
        check(build({**SPEC, "measures": {"x": "sum(shop)"}}), layout)
    with pytest.raises(SpecError, match="the event time 'shop' is string"):
        check(build({**SPEC, "time": "shop"}), layout)
    with pytest.raises(DatasetError, match=r"no dataset 'order' in .*: its datasets: orders"):
        Landing(tmp_path / "landing").layout("order")


def test_a_checkpoint_refuses_another_spec(tmp_path: Path) -> None:
    claim_checkpoint(tmp_path / "c", build(SPEC))
    claim_checkpoint(tmp_path / "c", build({**SPEC, "watermark": "1 hour"}))  # same query
    with pytest.raises(SpecError, match=r"was made for another spec \(its tables: hourly_shop"):
        claim_checkpoint(tmp_path / "c", build({**SPEC, "measures": {"n": "count"}}))


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(["spark", "rollup", *argv])
    except SystemExit as e:
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_bad_specs_on_the_command_line_are_one_line_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    landing = _landed(tmp_path, orders(0, 12))
    base = ["--landing", str(landing), "--warehouse", str(tmp_path / "w"), "--once"]
    opts = ["--dataset", "orders", "--time", "ts", "--group", "shop=site,shop"]
    opts += ["--grain", "hourly=1 hour"]
    code, err = _cli(capsys, *base, *opts, "--measure", "x=sum(price)")
    assert code == 2
    assert err.count("\n") == 1 and "has no column 'price'" in err
    code, err = _cli(capsys, *base, "--spec", str(IOT_SPEC))
    assert code == 2
    assert "no dataset 'readings' in" in err and "its datasets: orders" in err
    code, err = _cli(capsys, *base)
    assert code == 2 and "say what to roll up: --spec FILE" in err
    code, err = _cli(capsys, *base, *opts, "--measure", "x")
    assert code == 2 and "--measure 'x': write NAME=VALUE" in err
    code, err = _cli(capsys, *base, "--spec", str(tmp_path / "nope.toml"))
    assert code == 2 and "nope.toml: no such file" in err
    (tmp_path / "bad.toml").write_text("dataset = \n")
    code, err = _cli(capsys, *base, "--spec", str(tmp_path / "bad.toml"))
    assert code == 2 and "bad.toml: not TOML" in err
    assert not (tmp_path / "w" / "_checkpoints").exists()


def test_any_dataset_rolled_up_by_options_is_exact(tmp_path: Path) -> None:
    """Two passes, more landing in between: every window of both groups exact."""
    rows = orders(0, 60)
    lander = Lander(tmp_path / "landing", "orders", ORDERS)
    lander.land(rows[:30])
    lander.land(rows[30:])
    spec = tmp_path / "orders.toml"
    spec.write_text(
        'dataset = "orders"\ntime = "ts"\nwatermark = "1 hour"\n[grains]\nhourly = "1 hour"\n'
        '[groups]\nshop = ["site", "shop"]\nsite = ["site"]\n[measures]\n'
        + "".join(f'{k} = "{v}"\n' for k, v in SPEC["measures"].items())  # type: ignore[attr-defined]
    )
    argv = [sys.executable, "-m", "headwater", "spark", "rollup", "--landing"]
    argv += [str(tmp_path / "landing"), "--warehouse", str(tmp_path / "w"), "--once"]
    argv += ["--spec", str(spec)]
    done = subprocess.run(argv, check=False, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hourly: " in done.stdout and " 60 rows rolled up" in done.stdout
    more = orders(60, 30)
    lander.land(more)
    done = subprocess.run(argv, check=False, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows += more
    for table, keys in (("hourly_shop", ("site", "shop")), ("hourly_site", ("site",))):
        got = read_table(tmp_path / "w" / table).to_pylist()
        want = offline(rows, keys)
        assert len(got) == len(want)
        for g in got:
            key = (*(g[k] for k in keys), round(g["window_start"].timestamp() * 1000))
            w = want[key]
            assert g["n"] == w["n"] and g["refunds"] == w["refunds"], key
            assert g["revenue"] == w["revenue"] and g["lo"] == w["lo"] and g["hi"] == w["hi"]
            assert g["avg"] == pytest.approx(w["avg"], rel=1e-12)
            assert g["refund_rate"] == pytest.approx(w["refund_rate"], rel=1e-12)
            if w["sd"] is None:
                assert g["sd"] is None
            else:
                assert g["sd"] == pytest.approx(w["sd"], rel=1e-9)
            amounts = sorted(r["amount"] for r in rows if _in(r, key, keys))
            assert g["med"] in amounts
            assert "shop" not in g or table == "hourly_shop"
    spec_doc = json.loads((tmp_path / "w" / "_checkpoints" / "_spec.json").read_text())
    assert spec_doc["tables"] == ["hourly_shop", "hourly_site"]


def _in(r: dict[str, Any], key: tuple[Any, ...], keys: tuple[str, ...]) -> bool:
    return tuple(r[k] for k in keys) == key[:-1] and r["ts"] // HOUR * HOUR == key[-1]
