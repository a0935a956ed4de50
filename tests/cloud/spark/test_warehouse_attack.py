"""Two writers upserting into one warehouse table at once (two Spark jobs, a job and a
rollup: ``ctx.warehouse.upsert`` takes no warehouse lock): no row either wrote is lost."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from headwater.cloud.spark import _warehouse

_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import pyarrow as pa
    from headwater.cloud.spark import _warehouse
    table, who = Path(sys.argv[1]), sys.argv[2]
    for i in range(60):
        rows = pa.table({"k": [f"{who}{i}"], "v": [i], "date": ["2026-01-01"]})
        _warehouse.upsert(table, rows, ["k"], "date")
    """
)


def test_two_processes_upserting_one_partition_lose_no_row(tmp_path: Path) -> None:
    table = tmp_path / "wh" / "t"
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(table), who]) for who in "ab"]
    for w in writers:
        assert w.wait(120) == 0
    keys = set(_warehouse.read_table(table).column("k").to_pylist())
    assert keys == {f"{who}{i}" for who in "ab" for i in range(60)}
    assert [p.name for p in (table / "date=2026-01-01").iterdir()] == ["data.parquet"]
