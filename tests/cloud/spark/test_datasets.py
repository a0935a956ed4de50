"""Any landed dataset in Spark by name: batch and stream (both sources), its partition columns
from the landing, and a column the landing adds later read without anything restarted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.spark import DatasetError, Landing

from ._landing import Lander
from ._spark import spark_fixture
from .test_rollup_spec import ORDERS, orders

# per test: its Python workers (the manifests source) end with it
spark = spark_fixture("headwater-test-datasets", "function")


def _stream_all(
    spark: Any, landing: Landing, source: str, checkpoint: Path
) -> list[dict[str, Any]]:
    name = f"q_{source}_{checkpoint.name}".replace("-", "_")
    q = (
        landing.stream(spark, "orders", source=source)
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert q.exception() is None
    return [r.asDict() for r in spark.sql(f"select * from {name}").collect()]


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["site"], r["shop"], r["ts"], r["amount"])


# PySpark's Python data sources leave a socket to their planning worker for the collector
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_dataset_by_name_batch_and_stream_then_a_new_column(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "landing"
    lander = Lander(root, "orders", ORDERS)
    first = orders(0, 24)
    lander.land(first[:12])
    lander.land(first[12:])
    Lander(root, "returns", {"ts": pa.int64()}).land([{"ts": 1, "site": "a b/c"}])  # escaped
    landing = Landing(root)
    assert landing.names() == ["orders", "returns"]

    batch = landing.read(spark, "orders")
    assert batch.columns == ["shop", "amount", "refunded", "ts", "date", "site"]
    want = sorted(_key(r) for r in first)
    assert sorted(_key(r.asDict()) for r in batch.collect()) == want
    for source in ("files", "manifests"):
        got = _stream_all(spark, landing, source, tmp_path / f"c-{source}")
        assert sorted(_key(r) for r in got) == want, source
    # an escaped partition value comes back as it was written
    assert [r.site for r in landing.read(spark, "returns").collect()] == ["a b/c"]

    # the landing grows a nullable column (as LandingSink does: _schema.json, then files)
    (root / "orders" / "_schema.json").write_text(
        json.dumps(
            {
                "columns": {"shop": "string", "amount": "double", "refunded": "bool",
                            "ts": "int64", "coupon": "string"},
                "partitions": ["date", "site"],
            }
        )
    )  # fmt: skip
    grown = Lander(root, "orders", {**ORDERS, "coupon": pa.string()})
    more = [{**r, "coupon": f"c{i}"} for i, r in enumerate(orders(24, 6))]
    grown.land(more)
    coupons = {_key(r): r["coupon"] for r in more}
    rows = [r.asDict() for r in landing.read(spark, "orders").collect()]
    assert len(rows) == 30
    assert {_key(r): r["coupon"] for r in rows if r["coupon"]} == coupons
    assert sum(r["coupon"] is None for r in rows) == 24
    for source in ("files", "manifests"):
        got = _stream_all(spark, landing, source, tmp_path / f"c2-{source}")
        assert {_key(r): r["coupon"] for r in got if r["coupon"]} == coupons, source
        assert len(got) == 30

    with pytest.raises(
        DatasetError, match=r"no dataset 'order' in .*: its datasets: orders, returns"
    ):
        landing.read(spark, "order")
