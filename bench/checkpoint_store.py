"""Checkpoint store: a snapshot's save, local RocksDB against a bucket in a real Garage.

A save is what happens between a task's snapshot reaching its container and the
container acknowledging it: with the local backend a synced RocksDB write; with the
shared one the same write, then the upload to the bucket (on a worker thread) that the
acknowledgement waits for. Both stores take the same deltas (``--keys`` keys changed
of a task holding ``--state`` keys, 64-byte values), one checkpoint at a time over
``--tasks`` tasks whose saves run concurrently, as a container's do; the two backends
alternate checkpoint by checkpoint in one run. Each checkpoint then commits (fold,
and for the bucket a new base when due, whose upload is timed too).

Reported: each save's seconds to acknowledge (median, p95), how long the event loop
was held (the longest lateness of a 1 ms ticker while the saves ran, and while a base
went up), the commit's time on the loop, and a restore of the last checkpoint on an
empty disk (the bucket's copy, as a container restarted on another worker reads it).
Garage runs on this machine (``tests/_garage.py``; ``scripts/install-garage`` builds it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from headwater.common.state._checkpoints import Checkpoints, LocalCheckpoints
from headwater.common.state._shared_store import S3Checkpoints
from headwater.common.state._state import KeyedState, SnapshotLog, State

RESULTS = Path(__file__).parent / "results"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoints", type=int, default=40, help="checkpoints per backend")
    p.add_argument("--tasks", type=int, default=4, help="tasks saving per checkpoint")
    p.add_argument("--state", type=int, default=20_000, help="keys in each task's state")
    p.add_argument("--keys", type=int, default=200, help="keys changed per checkpoint")
    p.add_argument("--out", default=str(RESULTS / "checkpoint_store.json"))


class _Backend:
    def __init__(self, name: str, store: Checkpoints, args: argparse.Namespace) -> None:
        self.name, self.store = name, store
        self.logs = [SnapshotLog() for _ in range(args.tasks)]
        self.keyed = [
            KeyedState({k: f"{k:064d}" for k in range(args.state)}) for _ in range(args.tasks)
        ]
        self.save_s: list[float] = []
        self.held_s: list[float] = []
        self.commit_s: list[float] = []
        self.rebase_s: list[float] = []
        self.rebase_held_s: list[float] = []  # the loop's longest hold while a base went up
        self.bytes: list[int] = []

    async def checkpoint(self, ck: int, changed: int) -> None:
        blobs = []
        for task, (log, ks) in enumerate(zip(self.logs, self.keyed, strict=True)):
            for i in range(changed):
                ks[(ck * changed + i) % len(ks)] = f"{ck:064d}"
            blobs.append((task, log.dump(ck, State({"at": ck}), {"values": ks})))
        self.bytes += [len(b) for _, b in blobs]
        lateness = [0.0]
        stop = asyncio.Event()

        async def ticker() -> None:  # how late a 1 ms timer fires: the loop held
            while not stop.is_set():
                t = time.perf_counter()
                await asyncio.sleep(0.001)
                lateness[0] = max(lateness[0], time.perf_counter() - t - 0.001)

        async def save(task: int, blob: bytes) -> None:
            t = time.perf_counter()
            self.store.save(ck, task, blob)
            await self.store.async_publish(ck, task, blob)
            self.save_s.append(time.perf_counter() - t)

        tick = asyncio.get_running_loop().create_task(ticker())
        await asyncio.sleep(0.002)
        await asyncio.gather(*(save(task, blob) for task, blob in blobs))
        self.held_s.append(lateness[0])
        for log in self.logs:
            log.committed(ck)
        t = time.perf_counter()
        self.store.commit(max(ck - 1, 1))
        self.commit_s.append(time.perf_counter() - t)
        if isinstance(self.store, S3Checkpoints) and self.store._rebases:
            lateness[0] = 0.0
            t = time.perf_counter()
            await self.store.async_idle()
            self.rebase_s.append(time.perf_counter() - t)
            self.rebase_held_s.append(lateness[0])
        stop.set()
        await tick

    def figures(self) -> dict[str, Any]:
        q = statistics.quantiles(self.save_s, n=20)
        return {
            "saves": len(self.save_s),
            "delta_bytes_median": statistics.median(self.bytes),
            "save_ms_median": round(statistics.median(self.save_s) * 1000, 2),
            "save_ms_p95": round(q[18] * 1000, 2),
            "loop_held_ms_max": round(max(self.held_s) * 1000, 2),
            "loop_held_ms_median": round(statistics.median(self.held_s) * 1000, 2),
            "commit_on_loop_ms_median": round(statistics.median(self.commit_s) * 1000, 2),
            "commit_on_loop_ms_max": round(max(self.commit_s) * 1000, 2),
            **(
                {
                    "base_uploads": self.store.rebased,
                    "base_upload_ms_median": round(statistics.median(self.rebase_s) * 1000, 1),
                    "base_upload_ms_max": round(max(self.rebase_s) * 1000, 1),
                    "loop_held_by_a_base_ms_max": round(max(self.rebase_held_s) * 1000, 1),
                }
                if isinstance(self.store, S3Checkpoints)
                else {}
            ),
        }


async def _bench(args: argparse.Namespace, garage: Any, folder: Path) -> dict[str, Any]:
    local = _Backend("local", LocalCheckpoints(folder / "local"), args)
    shared = _Backend("s3", S3Checkpoints(folder / "s3", garage.objects(), "bench/c/t/0"), args)
    for b in (local, shared):
        await b.store.async_restore(0, list(range(args.tasks)))
    for ck in range(1, args.checkpoints + 1):
        for b in (local, shared) if ck % 2 else (shared, local):  # alternate who goes first
            await b.checkpoint(ck, args.keys)
    out = {b.name: b.figures() for b in (local, shared)}
    local.store.close()
    shared.store.close()
    elsewhere = S3Checkpoints(folder / "elsewhere", garage.objects(), "bench/c/t/0")
    t = time.perf_counter()
    await elsewhere.async_restore(args.checkpoints, list(range(args.tasks)))
    out["s3"]["restore_on_an_empty_disk_ms"] = round((time.perf_counter() - t) * 1000, 1)
    elsewhere.close()
    return out


def run(args: argparse.Namespace) -> int:
    from tests._garage import Garage

    with tempfile.TemporaryDirectory(prefix="hw-bench-ckpt-") as tmp:
        garage = Garage(Path(tmp) / "garage")
        try:
            garage.start()
            figures = asyncio.run(_bench(args, garage, Path(tmp)))
        finally:
            garage.stop()
    result = {"args": {k: v for k, v in vars(args).items() if k != "out"}, **figures}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0
