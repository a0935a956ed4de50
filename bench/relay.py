"""Stream manager relay: records/s through one stmgr hop, 100-byte records.

Real processes on real sockets, no instances and no user code:

* ``stmgr``: a ``StreamManager`` for a two-task topology (spout ``src`` ->
  bolt ``sink``, one container), serving its Unix socket, active;
* ``send``: connects as the spout task with the hello an instance sends,
  waits for ``activate``, then writes one pre-encoded DATA frame of
  ``--batch`` records to the bolt task over and over, as fast as the socket
  takes it (the frame is encoded once; a record is a value list of one
  97-byte ``bytes``, 100 bytes of msgpack);
* ``recv``: connects as the bolt task and counts records by each frame's
  header ``count``; payloads are skipped, never decoded.

The rate counts from the receiver reaching ``--warmup`` records to it
reaching ``--warmup`` + ``--records``. The stmgr's own backpressure applies
(its write buffer towards the bolt throttles the spout's socket), so the
figure is what the relay sustains. Each batch size in ``--batch`` is a
variant; with ``--two-stmgr`` a third one puts the receiver on container 1,
behind a second stmgr reached over the real gRPC peer link (first batch
size only). Variants alternate within each of ``--runs`` repetitions;
figures are medians. MB/s counts what the receiver read (frames with
their headers and length prefixes). CPU is per process over the measured
window (interpolated from psutil samples every 50 ms), also per record;
RSS is the peak sampled. The stmgrs' own counters (frames and bytes in and
out, time spent throttled) are kept with each run.

Run one role by hand with ``python -m bench.relay ROLE --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import pack_round_robin
from headwater.common.runtime._procs import spawn, terminate
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.wire import Kind, decode, encode, encode_frame
from headwater.common.wire._frame import FRAME_HEADER, STMGR, frame_entries, length_prefix

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("results") / "relay.json"
RECORD = [b"r" * 97]  # msgpack: fixarray(1) + bin8 header (2) + 97 bytes = 100 bytes
_HEAD = 4 + FRAME_HEADER.size  # length prefix + frame header
Popen = subprocess.Popen[bytes]


class _Src(Spout):
    outputs = ("value",)

    def next_tuple(self) -> None:
        pass  # never runs: the sender process plays this task


class _Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass  # never runs: the receiver process plays this task


TOPOLOGY = (
    Topology("relay").add_spout("src", _Src).add_bolt("sink", _Sink, inputs={"src": shuffle()})
)


def _task(component: str) -> int:
    plan = pack_round_robin(TOPOLOGY, 1)
    return next(i.task_id for i in plan.instances if i.component == component)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--records", type=int, default=20_000_000, help="measured records per run")
    p.add_argument("--warmup", type=int, default=1_000_000, help="records before measuring")
    p.add_argument("--batch", type=int, nargs="+", default=[1000, 100], help="records per frame")
    p.add_argument("--runs", type=int, default=3, help="repetitions of each variant")
    p.add_argument(
        "--two-stmgr",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also relay through two stmgrs linked by gRPC",
    )
    p.add_argument("--out", type=Path, default=RESULTS)


# -- the orchestrator ---------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    name: str
    batch: int
    containers: int


class Sampler(threading.Thread):
    """CPU seconds and RSS of named processes, sampled every 50 ms with a timestamp."""

    def __init__(self, procs: dict[str, int]) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.procs = {role: psutil.Process(pid) for role, pid in procs.items()}
        self.samples: dict[str, list[tuple[float, float]]] = {r: [] for r in procs}
        self.peak_rss = dict.fromkeys(procs, 0)

    def run(self) -> None:
        while True:
            for role, p in self.procs.items():
                try:
                    with p.oneshot():
                        cpu, rss = sum(p.cpu_times()[:2]), p.memory_info().rss
                except psutil.Error:
                    continue
                self.samples[role].append((time.monotonic(), cpu))
                self.peak_rss[role] = max(self.peak_rss[role], rss)
            if self.stop.wait(0.05):
                return

    def report(self, t0: float, t1: float, records: int) -> dict[str, dict[str, float]]:
        out = {}
        for role, samples in self.samples.items():
            cpu = _cpu_at(samples, t1) - _cpu_at(samples, t0)
            out[role] = {
                "cpu_s": round(cpu, 3),
                "cpu_cores": round(cpu / (t1 - t0), 3),
                "cpu_ns_per_record": round(cpu / records * 1e9, 1),
                "peak_rss_mb": round(self.peak_rss[role] / 2**20, 1),
            }
        return out


def _cpu_at(samples: list[tuple[float, float]], t: float) -> float:
    """A process's CPU seconds at time ``t``, linear between the samples around it."""
    before = [s for s in samples if s[0] <= t]
    after = [s for s in samples if s[0] >= t]
    if not before or not after:
        return (before or after)[-1 if before else 0][1]
    (ta, ca), (tb, cb) = before[-1], after[0]
    return ca if tb == ta else ca + (cb - ca) * (t - ta) / (tb - ta)


def _wait_json(path: Path, timeout: float, procs: list[Popen]) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())  # type: ignore[no-any-return]
        dead = [p.args for p in procs if p.poll() not in (None, 0)]
        if dead:
            raise RuntimeError(f"a benchmark process failed: {dead[0]!r}")
        time.sleep(0.02)
    raise RuntimeError(f"no result at {path} within {timeout:.0f}s")


def _role(role: str, *argv: object) -> Popen:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return spawn(["-m", "bench.relay", role, *map(str, argv)], env=env)


def _one(v: Variant, args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hw-relay-"))
    procs: list[Popen] = []
    try:
        stmgrs: dict[str, int] = {}
        for c in range(v.containers):
            procs.append(
                _role(
                    "stmgr",
                    "--container",
                    c,
                    "--containers",
                    v.containers,
                    "--socket",
                    work / f"c{c}.sock",
                    "--work",
                    work,
                )
            )
            stmgrs[f"stmgr {c}" if v.containers > 1 else "stmgr"] = procs[-1].pid
        ready = [_wait_json(work / f"ready{c}.json", 30, procs) for c in range(v.containers)]
        if v.containers > 1:
            peers = {c: r["address"] for c, r in enumerate(ready)}
            (work / "peers.tmp").write_text(json.dumps(peers))
            (work / "peers.tmp").rename(work / "peers.json")
        last = v.containers - 1
        procs.append(
            _role(
                "recv",
                "--socket",
                work / f"c{last}.sock",
                "--warmup",
                args.warmup,
                "--records",
                args.records,
                "--out",
                work / "recv.json",
            )
        )
        receiver = procs[-1]
        time.sleep(0.2)  # let the bolt say hello first: no frame waits for it
        total = args.warmup + args.records
        procs.append(
            _role("send", "--socket", work / "c0.sock", "--batch", v.batch, "--records", total)
        )
        sampler = Sampler({**stmgrs, "sender": procs[-1].pid, "receiver": receiver.pid})
        sampler.start()
        try:
            result = _wait_json(work / "recv.json", 600, procs)
        finally:
            sampler.stop.set()
            sampler.join()
        terminate(procs)
        counters = [json.loads((work / f"stmgr{c}.json").read_text()) for c in range(v.containers)]
    finally:
        terminate(procs)
        shutil.rmtree(work, ignore_errors=True)
    wall = result["t1"] - result["t0"]
    return {
        "records_per_s": round(result["records"] / wall),
        "mb_per_s": round(result["bytes"] / wall / 1e6, 1),
        "seconds": round(wall, 2),
        "processes": sampler.report(result["t0"], result["t1"], result["records"]),
        "stmgr_counters": counters,
    }


def run(args: argparse.Namespace) -> int:
    variants = [Variant(f"1 hop, batch {b}", b, 1) for b in args.batch]
    if args.two_stmgr:
        variants.append(Variant(f"2 stmgrs, batch {args.batch[0]}", args.batch[0], 2))
    runs: dict[str, list[dict[str, Any]]] = {v.name: [] for v in variants}
    for i in range(args.runs):
        for v in variants:
            r = _one(v, args)
            runs[v.name].append(r)
            cpu = ", ".join(f"{k} {p['cpu_cores']:.2f}" for k, p in r["processes"].items())
            print(
                f"run {i + 1} {v.name}: {r['records_per_s']:,} records/s, "
                f"{r['mb_per_s']} MB/s, CPU cores: {cpu}",
                flush=True,
            )
    medians = {name: _medians(rs) for name, rs in runs.items()}
    _table(medians)
    result = {
        "record_bytes": len(encode(RECORD)),
        "records": args.records,
        "warmup": args.warmup,
        "runs_per_variant": args.runs,
        "target_records_per_s": 1_000_000,
        "median": medians,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


def _medians(rs: list[dict[str, Any]]) -> dict[str, Any]:
    roles = rs[0]["processes"]
    return {
        "records_per_s": round(statistics.median(r["records_per_s"] for r in rs)),
        "mb_per_s": round(statistics.median(r["mb_per_s"] for r in rs), 1),
        "processes": {
            role: {
                k: round(statistics.median(r["processes"][role][k] for r in rs), 3)
                for k in ("cpu_cores", "cpu_ns_per_record", "peak_rss_mb")
            }
            for role in roles
        },
    }


def _table(medians: dict[str, dict[str, Any]]) -> None:
    print(
        f"\n{'medians':<22}{'records/s':>12}{'MB/s':>8}{'stmgr ns/rec':>14}"
        "  per process: CPU cores, peak RSS MB"
    )
    for name, m in medians.items():
        procs = m["processes"]
        stmgr = sum(p["cpu_ns_per_record"] for r, p in procs.items() if r.startswith("stmgr"))
        each = "; ".join(
            f"{r} {p['cpu_cores']:.2f}, {p['peak_rss_mb']:.0f}" for r, p in procs.items()
        )
        print(f"{name:<22}{m['records_per_s']:>12,}{m['mb_per_s']:>8}{stmgr:>14.1f}  {each}")
    print()


# -- the roles ----------------------------------------------------------------
def _write_json(path: Path, obj: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj))
    tmp.rename(path)  # the orchestrator never reads half a file


async def _stmgr(args: argparse.Namespace) -> None:
    plan = pack_round_robin(TOPOLOGY, args.containers)
    stmgr = StreamManager(TOPOLOGY, plan, args.container)
    await stmgr.start_local_server(args.socket)
    address = await stmgr.start_peer_server("127.0.0.1") if args.containers > 1 else ""
    stmgr.set_active(True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    _write_json(args.work / f"ready{args.container}.json", {"address": address})
    if args.containers > 1:
        peers = args.work / "peers.json"
        while not peers.exists():
            await asyncio.sleep(0.02)
        stmgr.set_peers({int(c): a for c, a in json.loads(peers.read_text()).items()})
    await stop.wait()
    counters = {k: getattr(stmgr, k) for k in ("frames_in", "frames_out", "bytes_in", "bytes_out")}
    counters["throttled_ms"] = round(stmgr.throttled_time_s * 1000)
    _write_json(args.work / f"stmgr{args.container}.json", counters)
    await stmgr.close()


def _connect(path: str, task: int) -> socket.socket:
    """Connect to a stmgr as ``task`` and say hello the way an instance does."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    hello = encode({"type": "hello", "task": task, "pid": os.getpid()})
    frame = encode_frame(Kind.CONTROL, STMGR, task, 0, b"", hello)
    sock.sendall(length_prefix(frame) + frame)
    return sock


def _send(args: argparse.Namespace) -> None:
    src, sink = _task("src"), _task("sink")
    sock = _connect(args.socket, src)
    buf = b""
    while True:  # a spout waits for activate
        buf += sock.recv(65536)
        n = int.from_bytes(buf[:4], "little")
        if len(buf) >= 4 + n:
            frame, buf = buf[4 : 4 + n], buf[4 + n :]
            slen = frame[FRAME_HEADER.size - 1]
            if decode(frame[FRAME_HEADER.size + slen :]).get("type") == "activate":
                break
    frame = encode_frame(
        Kind.DATA, sink, src, args.batch, b"default", encode([RECORD] * args.batch)
    )
    one = length_prefix(frame) + frame
    per_chunk = max(1, (1 << 20) // len(one))  # about 1 MiB per sendall
    chunk = one * per_chunk
    frames = -(-args.records // args.batch)
    for _ in range(frames // per_chunk):
        sock.sendall(chunk)
    sock.sendall(one * (frames % per_chunk))
    while sock.recv(65536):  # stay connected until the orchestrator stops us
        pass


def _recv(args: argparse.Namespace) -> None:
    sock = _connect(args.socket, _task("sink"))
    total = args.warmup + args.records
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    count = nbytes = have = skip = pending = 0  # pending: records of a frame not all here
    t0 = b0 = c0 = None
    while count < total:
        n = sock.recv_into(view[have:])
        if not n:
            raise RuntimeError(f"stmgr closed the connection after {count} records")
        nbytes += n
        end, pos = have + n, 0
        if skip:  # the rest of a frame body (have == 0 here)
            pos = min(skip, end)
            skip -= pos
            if not skip:
                count, pending = count + pending, 0
        while not skip and end - pos >= _HEAD:
            size = int.from_bytes(buf[pos : pos + 4], "little")
            records = frame_entries(view[pos + 4 : end])
            pos += 4 + size
            if pos <= end:
                count += records
            else:
                skip, pending = pos - end, records
        have = 0 if skip else end - pos
        buf[:have] = buf[pos:end]
        if t0 is None and count >= args.warmup:
            t0, c0, b0 = time.monotonic(), count, nbytes
    t1 = time.monotonic()
    assert t0 is not None and c0 is not None and b0 is not None
    out = {"t0": t0, "t1": t1, "records": count - c0, "bytes": nbytes - b0}
    _write_json(args.out, out)


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.relay")
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("stmgr", help="serve a StreamManager until SIGTERM")
    s.add_argument("--container", type=int, required=True)
    s.add_argument("--containers", type=int, required=True)
    s.add_argument("--socket", required=True)
    s.add_argument("--work", type=Path, required=True, help="where ready/peers/counters go")
    s = sub.add_parser("send", help="play the spout task: write DATA frames")
    s.add_argument("--socket", required=True)
    s.add_argument("--batch", type=int, required=True)
    s.add_argument("--records", type=int, required=True, help="rounded up to whole frames")
    s = sub.add_parser("recv", help="play the bolt task: count records")
    s.add_argument("--socket", required=True)
    s.add_argument("--warmup", type=int, required=True)
    s.add_argument("--records", type=int, required=True)
    s.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.role == "stmgr":
        asyncio.run(_stmgr(args))
    elif args.role == "send":
        _send(args)
    else:
        _recv(args)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
