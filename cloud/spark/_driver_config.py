"""A Spark job driver's command line (``DriverConfig``, ``parse``) and its one-line errors.

The command line is the worker's contract with the driver (``_driver``); argparse
ends a bad one with its usage and exit status 2. A registering job's token never is on
it: ``--registry-stdin`` says that one JSON line on the standard input holds the
registry (``read_registry``), as the worker hands it (common/node/_spark_jobs.py).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from headwater._registry_client import Registry
from headwater.common._exceptions import HeadwaterError


@dataclass(frozen=True)
class DriverConfig:
    """One driver's command line."""

    job: Path
    name: str
    landing: Path
    warehouse: Path
    checkpoint: Path
    workdir: Path
    params: dict[str, str] = field(default_factory=dict)
    every_s: float | None = None
    continuous: bool = False
    interval_s: float = 5.0
    master: str | None = None
    # the model registry a job may register with: given in-process only (``headwater spark
    # run --master``), never on the driver's command line (a token there is in `ps`)
    registry: Registry | None = None
    registry_stdin: bool = False  # the registry comes on stdin (a submitted job's)

    @property
    def mode(self) -> str:
        return "continuous" if self.continuous else "every" if self.every_s else "once"


def parse(argv: Sequence[str]) -> DriverConfig:
    """The driver's command line (argparse: exit status 2 and one line when bad)."""
    p = argparse.ArgumentParser(prog="python -m headwater.cloud.spark.driver")
    p.add_argument("--job", required=True, type=Path, metavar="FILE")
    p.add_argument("--name", required=True)
    for folder in ("--landing", "--warehouse", "--checkpoint", "--workdir"):
        p.add_argument(folder, required=True, type=Path, metavar="DIR")
    p.add_argument("--param", action="append", default=[], type=param, metavar="KEY=VALUE")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--every", type=_positive, default=None, metavar="SECONDS")
    mode.add_argument("--continuous", action="store_true")
    p.add_argument("--interval", type=_positive, default=5.0, metavar="SECONDS")
    p.add_argument("--spark-master", default=None, metavar="URL")
    p.add_argument("--registry-stdin", action="store_true")
    a = p.parse_args(argv)
    return DriverConfig(
        job=a.job,
        name=a.name,
        landing=a.landing,
        warehouse=a.warehouse,
        checkpoint=a.checkpoint,
        workdir=a.workdir,
        params=dict(a.param),
        every_s=a.every,
        continuous=a.continuous,
        interval_s=a.interval,
        master=a.spark_master,
        registry_stdin=a.registry_stdin,
    )


def read_registry(line: str) -> Registry:
    """The registry of one JSON line, ``{"url": ..., "token": ..., "models": [...]}``, as
    the worker writes it on a registering job's stdin; HeadwaterError when it is not."""
    try:
        doc = json.loads(line)
    except ValueError:
        doc = None
    if not (
        isinstance(doc, dict)
        and isinstance(doc.get("url"), str)
        and doc["url"]
        and isinstance(doc.get("token"), str)
        and isinstance(doc.get("models"), list)
        and all(isinstance(m, str) for m in doc["models"])
    ):
        raise HeadwaterError(
            "--registry-stdin: the standard input holds no registry (one JSON line with "
            "url, token and models, as a worker writes it)"
        )
    return Registry(doc["url"].rstrip("/"), doc["token"], models=tuple(doc["models"]))


def param(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (a key of letters, digits, '_', '-', '.')."""
    key, eq, value = text.partition("=")
    if not eq or not key or not all(c.isalnum() or c in "_-." for c in key):
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE, e.g. day=2026-11-28")
    return key, value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds above 0")
    return value


def one_line(exc: BaseException | str) -> str:
    """An error as the last line of its traceback says it: the exception's name and the
    first line of its message, or, where the message carries a Python traceback (a job's
    function that raised inside Spark: a foreachBatch sink, a UDF), that traceback's last
    line (``KeyError: 'shop9'``)."""
    text = exc if isinstance(exc, str) else str(exc)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    inner = _traceback_end(lines)
    if inner:
        return inner[:500]
    if isinstance(exc, str):
        return (lines[0] if lines else "")[:500]
    out = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return out[:500]


def _traceback_end(lines: list[str]) -> str:
    """The exception line of the first Python traceback in ``lines``, or ""."""
    for i, line in enumerate(lines):
        if line.rstrip().endswith("Traceback (most recent call last):"):
            for after in lines[i + 1 :]:
                if not after[:1].isspace():
                    return after.strip()
    return ""
