"""Where a suite's wall time goes: each test's start and end on its worker.

With ``HEADWATER_TEST_TIMELINE=DIR`` set, every worker appends one JSON line per test to
``DIR/<worker>.jsonl`` (its node id, start and end in seconds since the epoch: setup, call
and teardown, module fixtures included in the test that made them; and the CPU seconds of
the worker and its ended children meanwhile); then

    python -m tests._timeline DIR

prints, per worker, its tests' time, when its last test ended and how long it stood idle
at the end while another worked, and the longest tests with their worker: what decides
the suite's wall time on several workers (docs/testing.md).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest

TIMELINE = "HEADWATER_TEST_TIMELINE"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    where = os.environ.get(TIMELINE)
    start, cpu = time.time(), _cpu()
    try:
        return (yield)
    finally:
        if where:
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            line = {
                "test": item.nodeid,
                "start": start,
                "end": time.time(),
                "cpu": round(_cpu() - cpu, 3),
            }
            folder = Path(where)
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / f"{worker}.jsonl", "a") as f:
                f.write(json.dumps(line) + "\n")


def _cpu() -> float:
    """CPU seconds of this worker and of its children that have ended (a container's
    processes, Docker's, are not counted)."""
    me, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def summary(folder: Path, top: int = 25) -> str:
    tests: dict[str, list[dict[str, float | str]]] = {}
    for f in sorted(folder.glob("*.jsonl")):
        tests[f.stem] = [json.loads(line) for line in f.read_text().splitlines() if line]
    if not tests:
        return f"no timeline in {folder}"
    t0 = min(float(t["start"]) for ts in tests.values() for t in ts)
    end = max(float(t["end"]) for ts in tests.values() for t in ts)
    lines = [f"wall {end - t0:.0f} s from the first test's start to the last test's end"]
    for worker, ts in tests.items():
        busy = sum(float(t["end"]) - float(t["start"]) for t in ts)
        cpu = sum(float(t.get("cpu", 0.0)) for t in ts)
        last = max(float(t["end"]) for t in ts)
        lines.append(
            f"{worker}: {len(ts)} tests, {busy:.0f} s in tests ({cpu:.0f} CPU-s counted), "
            f"last ended at {last - t0:.0f} s (idle {end - last:.0f} s at the end)"
        )
    every = sorted(
        ((float(t["end"]) - float(t["start"]), float(t.get("cpu", 0.0)), w, str(t["test"]))
         for w, ts in tests.items() for t in ts),
        reverse=True,
    )  # fmt: skip
    lines.append(f"the {top} longest (wall, CPU counted, worker):")
    lines += [f"{s:8.1f} s {c:7.1f} s  {w}  {name}" for s, c, w, name in every[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 25))
