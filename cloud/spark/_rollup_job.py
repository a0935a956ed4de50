"""A rollup spec run as a Spark job (``headwater spark submit SPEC.toml``, ``spark run``).

The driver (``_driver``) hands a ``.toml`` job file here with the job's session
and context: the spec's queries write to the job's warehouse, with their
checkpoints in the job's own folder and the trigger of the job's mode. A run
that ends (once, or each run of a scheduled job) waits for its queries to end;
a continuous one returns with them running, for the driver to watch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._datasets import DatasetError
from ._rollup import RollupConfig, start_all, wait_for_layout
from ._rollup_spec import load

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ._job import JobContext


def run_spec_job(spark: SparkSession, ctx: JobContext, spec_file: Path) -> None:
    """Start the rollups of ``spec_file`` in ``spark`` for the job ``ctx``; see the module doc."""
    cfg = RollupConfig(
        spec=load(spec_file),
        landing=ctx.landing.root,
        warehouse=ctx.warehouse.path,
        checkpoint=ctx.checkpoint,
        once=not ctx.continuous,
        interval_s=ctx.interval_s,
    )
    layout = wait_for_layout(cfg, print)
    if layout is None:
        if ctx.continuous:
            raise DatasetError(f"{cfg.spec.dataset!r} never landed")
        print(f"nothing of {cfg.spec.dataset!r} has landed yet: nothing to roll up")
        return
    queries = start_all(spark, cfg, layout)
    if ctx.continuous:
        return
    for q in queries:
        q.awaitTermination()
    for q in queries:
        exc = q.exception()
        if exc is not None:
            raise exc
