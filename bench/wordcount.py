"""Word count over N containers: throughput (max rate) and latency (fixed offered rate).

Configurations, run in turn within each repetition so that noise on the
machine spreads over all of them:

``max-amo``   max rate, at most once
``max-alo``   max rate, at least once (XOR acking)
``fixed-amo`` at most once, offered at ``--rate-fraction`` of this repetition's max-amo rate
``fixed-alo`` at least once, offered at ``--rate-fraction`` of this repetition's max-alo rate

Throughput is the delta of the count bolt's ``executed`` (words) and the split
bolt's ``executed`` (sentences) between the end of the warmup and the end of
the run, divided by the elapsed time between the two metric reads. Latency is
end to end, spout emit to count bolt, from samples whose receive time falls
in the same window. No speed is asserted anywhere: this only measures.

``--links tls,insecure`` runs every configuration with the cluster's links in
each mode (mutual TLS, as ``headwater run`` does by default, or ``headwater run
--insecure`` plaintext), the modes interleaved within each repetition: with 2 or
more containers the stream managers' peer links carry the tuples, so the two
give the cost of TLS on the data plane.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

import psutil

from bench.wordcount_topology import WORDS_PER_SENTENCE
from headwater.cloud.local import LocalCluster

TOPOLOGY_FILE = Path(__file__).with_name("wordcount_topology.py")
DEFAULT_OUT = Path(__file__).parent / "results" / "wordcount.json"
CONFIGS = ("max-amo", "max-alo", "fixed-amo", "fixed-alo")
SAMPLE_S = 0.5


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=3, help="repetitions of every configuration")
    p.add_argument("--duration", type=float, default=20.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring")
    p.add_argument("--containers", type=int, default=2)
    p.add_argument("--parallelism", type=int, default=2, help="tasks per component")
    p.add_argument("--batch", type=int, default=None, help="headwater.batch.size")
    p.add_argument("--linger-ms", type=float, default=None, help="headwater.batch.linger.ms")
    p.add_argument(
        "--pending", type=int, default=10000, help="topology.max.spout.pending under at least once"
    )
    p.add_argument(
        "--rate-fraction",
        type=float,
        default=0.5,
        help="offered rate of the fixed-* configs, as a fraction of max rate",
    )
    p.add_argument("--lat-every", type=int, default=16, help="sample the latency of 1 word in N")
    p.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help=f"comma-separated subset of {', '.join(CONFIGS)}",
    )
    p.add_argument(
        "--links",
        default="tls",
        help="comma-separated link modes to run every configuration in: tls, insecure",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")


# -- one run ---------------------------------------------------------------------


def _read_hwm_kb(pid: int) -> int:
    """Peak RSS (VmHWM) of a live process in KiB, 0 when unreadable."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class ProcSampler:
    """Peak RSS (sampled, and VmHWM) and CPU seconds of every cluster process."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.procs: dict[str, psutil.Process] = {}
        self.kind: dict[str, str] = {}
        self.peak_rss: dict[str, int] = {}
        self.cpu_mark: dict[str, float] = {}
        self.refresh()

    def refresh(self) -> None:
        tasks = self.cluster.metrics()["tasks"]
        for key, pid in self.cluster.pids().items():
            proc = self.procs.get(key)
            if proc is None or proc.pid != pid:
                try:
                    self.procs[key] = psutil.Process(pid)
                except psutil.NoSuchProcess:
                    continue
            if key == "tmaster":
                self.kind[key] = "tmaster"
            elif key.startswith("container:"):
                self.kind[key] = "container (stmgr)"
            else:
                self.kind[key] = str(tasks[key.split(":", 1)[1]]["component"])

    def sample(self) -> None:
        for key, proc in self.procs.items():
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                continue
            self.peak_rss[key] = max(self.peak_rss.get(key, 0), rss)

    def cpu(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, proc in self.procs.items():
            try:
                t = proc.cpu_times()
            except psutil.Error:
                continue
            out[key] = t.user + t.system
        return out

    def finish(self, cpu_start: dict[str, float]) -> dict[str, dict[str, float]]:
        """Per process kind: processes, CPU s total and in the window, peak RSS MiB (max)."""
        self.sample()
        cpu_end = self.cpu()
        kinds: dict[str, dict[str, float]] = {}
        for key, proc in self.procs.items():
            k = kinds.setdefault(
                self.kind[key], {"procs": 0, "cpu_s": 0.0, "cpu_window_s": 0.0, "peak_rss_mib": 0.0}
            )
            k["procs"] += 1
            k["cpu_s"] += cpu_end.get(key, 0.0)
            k["cpu_window_s"] += cpu_end.get(key, 0.0) - cpu_start.get(key, 0.0)
            peak = max(self.peak_rss.get(key, 0), _read_hwm_kb(proc.pid) * 1024)
            k["peak_rss_mib"] = max(k["peak_rss_mib"], peak / 2**20)
        return {name: {f: round(v, 2) for f, v in k.items()} for name, k in kinds.items()}


def _sleep_sampling(sampler: ProcSampler, cluster: LocalCluster, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    next_refresh = time.monotonic() + 2.0
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(SAMPLE_S, left))
        sampler.sample()
        if time.monotonic() >= next_refresh:  # a restarted instance has a new pid
            cluster._check_alive()
            sampler.refresh()
            next_refresh = time.monotonic() + 2.0


def _latency(out_dir: Path, t0_ns: int, t1_ns: int) -> dict[str, float]:
    lat = array("q")
    for path in sorted(out_dir.glob("lat-*.bin")):
        raw = array("q")
        raw.frombytes(path.read_bytes()[: (path.stat().st_size // 16) * 16])
        recv, dt = raw[0::2], raw[1::2]
        lat.extend(d for r, d in zip(recv, dt, strict=True) if t0_ns <= r <= t1_ns)
    if not lat:
        return {"samples": 0}
    s = sorted(lat)

    def pct(q: float) -> float:
        return round(s[min(len(s) - 1, int(q * len(s)))] / 1e6, 3)

    return {
        "samples": len(s),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "p999_ms": pct(0.999),
        "max_ms": round(s[-1] / 1e6, 3),
    }


def _total(m: dict[str, Any], comp: str, key: str) -> float:
    return float(m["components"].get(comp, {}).get(key, 0.0))


def _user(m: dict[str, Any], name: str) -> float:
    return sum(float(t.get(f"user:{name}", 0.0)) for t in m["tasks"].values())


def _containers(m: dict[str, Any], key: str) -> float:
    return sum(float(c.get(key, 0.0)) for c in m["containers"].values())


def run_one(
    args: argparse.Namespace, config: str, rate_per_spout: float, insecure: bool = False
) -> dict[str, Any]:
    """Start a cluster, warm up, measure for ``args.duration``, stop. Always stops."""
    mode = "atleastonce" if config.endswith("alo") else "atmostonce"
    out_dir = Path(tempfile.mkdtemp(prefix="hwb-"))
    env = {
        "BENCH_MODE": mode,
        "BENCH_RATE": str(rate_per_spout),
        "BENCH_PAR": str(args.parallelism),
        "BENCH_PENDING": str(args.pending),
        "BENCH_OUT": str(out_dir),
        "BENCH_LAT_EVERY": str(args.lat_every),
    }
    if args.batch is not None:
        env["BENCH_BATCH"] = str(args.batch)
    if args.linger_ms is not None:
        env["BENCH_LINGER_MS"] = str(args.linger_ms)
    try:
        return _run_cluster(
            args,
            config,
            mode=mode,
            rate_per_spout=rate_per_spout,
            env=env,
            out_dir=out_dir,
            insecure=insecure,
        )
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _run_cluster(
    args: argparse.Namespace,
    config: str,
    *,
    mode: str,
    rate_per_spout: float,
    env: dict[str, str],
    out_dir: Path,
    insecure: bool = False,
) -> dict[str, Any]:
    cluster = LocalCluster(TOPOLOGY_FILE, containers=args.containers, env=env, insecure=insecure)
    try:
        cluster.start()
        cluster.wait_running(timeout=60.0)
        sampler = ProcSampler(cluster)
        _sleep_sampling(sampler, cluster, args.warmup)
        m0, t0, t0_ns = cluster.metrics(), time.monotonic(), time.time_ns()
        cpu0 = sampler.cpu()
        _sleep_sampling(sampler, cluster, args.duration)
        m1, t1, t1_ns = cluster.metrics(), time.monotonic(), time.time_ns()
        procs = sampler.finish(cpu0)
    finally:
        cluster.stop()  # count bolts write their last latency samples on close

    elapsed = t1 - t0

    def rate(comp: str, key: str) -> float:
        return round((_total(m1, comp, key) - _total(m0, comp, key)) / elapsed, 1)

    def delta_c(key: str) -> float:
        return _containers(m1, key) - _containers(m0, key)

    batches = delta_c("batches_in")
    result: dict[str, Any] = {
        "config": config,
        "mode": mode,
        "links": "insecure" if insecure else "tls",
        "offered_sentences_per_s": round(rate_per_spout * args.parallelism, 1) or None,
        "elapsed_s": round(elapsed, 2),
        "sentences_per_s": rate("split", "executed"),
        "words_per_s": rate("count", "executed"),
        "spout_emitted_per_s": rate("sentences", "emitted"),
        "spout_acked_per_s": rate("sentences", "acked") if mode == "atleastonce" else None,
        "failed": _total(m1, "sentences", "failed"),
        "restarts": _total(m1, "count", "restarts")
        + _total(m1, "split", "restarts")
        + _total(m1, "sentences", "restarts"),
        "spout_behind_10ms": _user(m1, "behind_10ms") - _user(m0, "behind_10ms"),
        "stmgr_bytes_in_per_s": round(delta_c("bytes_in") / elapsed),
        "stmgr_batches_in_per_s": round(batches / elapsed),
        "stmgr_bytes_per_batch": round(delta_c("bytes_in") / batches) if batches else None,
        "stmgr_backpressure_pct": round(
            delta_c("backpressure_ms") / 10 / elapsed / args.containers, 1
        ),
        "stmgr_throttled_pct": round(delta_c("throttled_ms") / 10 / elapsed / args.containers, 1),
        "count_execute_latency_us": round(
            statistics.fmean(
                float(t.get("execute_latency_us", 0.0))
                for t in m1["tasks"].values()
                if t.get("component") == "count"
            ),
            2,
        ),
        "latency": _latency(out_dir, t0_ns, t1_ns),
        "procs": procs,
    }
    result["words_per_s_sampled"] = _sampled_rate(result, args.lat_every)
    return result


def _sampled_rate(result: dict[str, Any], lat_every: int) -> float:
    """Words/s from the count bolts' own receive timestamps (1 sample per ``lat_every`` words).

    Independent of the metrics pipeline, whose counters advance in 1 s steps
    (instance report, then stmgr heartbeat), so a 20 s metric delta is only
    good to about +-5%; the sampled rate is exact to ``lat_every`` words.
    """
    samples = int(result["latency"].get("samples", 0))
    return round(samples * lat_every / float(result["elapsed_s"]), 1)


# -- the whole benchmark ---------------------------------------------------------


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "mem_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _median(values: list[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return round(statistics.median(vs), 3) if vs else None


def summarize(runs: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    configs = [c for c in CONFIGS if any(c in r for r in runs)]
    for c in configs:
        rs = [r[c] for r in runs if c in r]
        s: dict[str, Any] = {
            k: _median([r[k] for r in rs])
            for k in (
                "offered_sentences_per_s",
                "sentences_per_s",
                "words_per_s",
                "words_per_s_sampled",
                "spout_acked_per_s",
                "stmgr_batches_in_per_s",
                "stmgr_bytes_per_batch",
                "stmgr_backpressure_pct",
                "count_execute_latency_us",
            )
        }
        s["words_per_s_min_max"] = [
            min(r["words_per_s"] for r in rs),
            max(r["words_per_s"] for r in rs),
        ]
        s["latency_ms"] = {
            q: _median([r["latency"].get(q) for r in rs])
            for q in ("p50_ms", "p99_ms", "p999_ms", "max_ms")
        }
        kinds = sorted({k for r in rs for k in r["procs"]})
        s["procs"] = {
            k: {
                f: _median([r["procs"][k][f] for r in rs if k in r["procs"]])
                for f in ("procs", "cpu_s", "cpu_window_s", "peak_rss_mib")
            }
            for k in kinds
        }
        summary[c] = s

    def ratio(a: str, b: str, key: str) -> float | None:
        x = summary.get(a, {}).get(key)
        y = summary.get(b, {}).get(key)
        return round(x / y, 3) if x and y else None

    summary["ratios"] = {
        "words_per_s max-alo/max-amo": ratio("max-alo", "max-amo", "words_per_s"),
        "p50 fixed-alo/fixed-amo": None,
    }
    la = summary.get("fixed-alo", {}).get("latency_ms", {}).get("p50_ms")
    lb = summary.get("fixed-amo", {}).get("latency_ms", {}).get("p50_ms")
    summary["ratios"]["p50 fixed-alo/fixed-amo"] = round(la / lb, 3) if la and lb else None
    for c in ("fixed-amo", "fixed-alo"):
        x = summary.get(c, {}).get("words_per_s_sampled")
        y = summary.get(c, {}).get("offered_sentences_per_s")
        summary["ratios"][f"achieved/offered words {c}"] = (
            round(x / (y * WORDS_PER_SENTENCE), 3) if x and y else None
        )
    return summary


def print_table(summary: dict[str, Any], duration: float) -> None:
    out = sys.stdout
    out.write(f"\nmedians over runs, {duration:g} s measured each\n")
    out.write(
        f"{'config':<10} {'offered s/s':>11} {'sentences/s':>11} {'words/s':>9} {'sampled':>9} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'p999 ms':>8} {'batches/s':>9} {'B/batch':>8} "
        f"{'bp %':>5}\n"
    )
    for c in CONFIGS:
        s = summary.get(c)
        if s is None:
            continue
        lat = s["latency_ms"]

        def f(v: float | None, fmt: str = ",.0f") -> str:
            return "-" if v is None else format(v, fmt)

        out.write(
            f"{c:<10} {f(s['offered_sentences_per_s']):>11} {f(s['sentences_per_s']):>11} "
            f"{f(s['words_per_s']):>9} {f(s['words_per_s_sampled']):>9} "
            f"{f(lat['p50_ms'], '.1f'):>8} "
            f"{f(lat['p99_ms'], '.1f'):>8} {f(lat['p999_ms'], '.1f'):>8} "
            f"{f(s['stmgr_batches_in_per_s']):>9} {f(s['stmgr_bytes_per_batch']):>8} "
            f"{f(s['stmgr_backpressure_pct'], '.0f'):>5}\n"
        )
    out.write("\nper process kind (median): CPU s in the measured window / peak RSS MiB\n")
    kinds = sorted({k for c in CONFIGS if c in summary for k in summary[c]["procs"]})
    out.write(f"{'kind':<18}" + "".join(f" {c:>16}" for c in CONFIGS if c in summary) + "\n")
    for k in kinds:
        cells = []
        for c in CONFIGS:
            if c not in summary:
                continue
            p = summary[c]["procs"].get(k)
            cells.append(
                "-"
                if p is None
                else f"{p['cpu_window_s'] / p['procs']:.1f}s {p['peak_rss_mib']:.0f}MiB"
            )
        out.write(f"{k:<18}" + "".join(f" {x:>16}" for x in cells) + "\n")
    out.write("\nratios: " + ", ".join(f"{k} = {v}" for k, v in summary["ratios"].items()) + "\n")


LINKS = ("tls", "insecure")


def _repetition(
    args: argparse.Namespace,
    configs: list[str],
    runs: list[dict[str, dict[str, Any]]],
    i: int,
    links: str,
) -> dict[str, dict[str, Any]]:
    """Every configuration once, with the links in mode ``links``."""
    this: dict[str, dict[str, Any]] = {}
    for config in CONFIGS:
        if config not in configs:
            continue
        rate = 0.0
        if config.startswith("fixed-"):
            base = this.get(f"max-{config[6:]}")
            if base is None:  # no max run in this repetition: use the median so far
                prev = [
                    r[f"max-{config[6:]}"]["sentences_per_s"]
                    for r in runs
                    if f"max-{config[6:]}" in r
                ]
                if not prev:
                    sys.stderr.write(f"{config} needs max-{config[6:]}; skipped\n")
                    continue
                base_rate = statistics.median(prev)
            else:
                base_rate = base["sentences_per_s"]
            rate = args.rate_fraction * base_rate / args.parallelism
        sys.stderr.write(
            f"run {i + 1}/{args.runs} {config} ({links}) "
            f"{'max rate' if not rate else f'{rate:.0f} sentences/s/spout'} ..."
        )
        sys.stderr.flush()
        r = run_one(args, config, rate, insecure=links == "insecure")
        this[config] = r
        sys.stderr.write(
            f" {r['words_per_s']:,.0f} words/s, "
            f"p50 {r['latency'].get('p50_ms')} ms, "
            f"p99 {r['latency'].get('p99_ms')} ms\n"
        )
    return this


def _tls_cost(summaries: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """tls / insecure of the medians: throughput, latency and stream-manager CPU."""
    out: dict[str, float | None] = {}
    tls, plain = summaries.get("tls", {}), summaries.get("insecure", {})
    for c in CONFIGS:
        a, b = tls.get(c), plain.get(c)
        if a is None or b is None:
            continue
        pairs = {
            "words_per_s": (a["words_per_s"], b["words_per_s"]),
            "words_per_s_sampled": (a["words_per_s_sampled"], b["words_per_s_sampled"]),
            "p50_ms": (a["latency_ms"]["p50_ms"], b["latency_ms"]["p50_ms"]),
            "p99_ms": (a["latency_ms"]["p99_ms"], b["latency_ms"]["p99_ms"]),
            "stmgr_cpu_window_s": (
                a["procs"].get("container (stmgr)", {}).get("cpu_window_s"),
                b["procs"].get("container (stmgr)", {}).get("cpu_window_s"),
            ),
        }
        for k, (x, y) in pairs.items():
            out[f"{c} {k} tls/insecure"] = round(x / y, 3) if x and y else None
    return out


def run(args: argparse.Namespace) -> int:
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown:
        sys.stderr.write(f"unknown configs {unknown}; choose from {', '.join(CONFIGS)}\n")
        return 2
    modes = [m.strip() for m in args.links.split(",") if m.strip()]
    if not modes or set(modes) - set(LINKS):
        sys.stderr.write(f"--links takes {', '.join(LINKS)} (comma-separated)\n")
        return 2
    info = machine()
    by_mode: dict[str, list[dict[str, dict[str, Any]]]] = {m: [] for m in modes}
    started = time.time()
    for i in range(args.runs):
        # interleaved: the modes take turns going first
        for links in modes if i % 2 == 0 else list(reversed(modes)):
            by_mode[links].append(_repetition(args, configs, by_mode[links], i, links))
    summaries = {m: summarize(rs) for m, rs in by_mode.items()}
    for m, summary in summaries.items():
        if len(modes) > 1:
            sys.stdout.write(f"\n== links: {m}")
        print_table(summary, args.duration)
    doc: dict[str, Any] = {
        "benchmark": "wordcount",
        "command": "python -m bench wordcount " + " ".join(sys.argv[2:]),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_s": round(time.time() - started, 1),
        "machine": info,
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    if len(modes) == 1:
        doc.update(summary=summaries[modes[0]], runs=by_mode[modes[0]])
    else:
        cost = _tls_cost(summaries)
        sys.stdout.write("\ncost of TLS: " + ", ".join(f"{k} = {v}" for k, v in cost.items()))
        doc.update(summary=summaries, tls_cost=cost, runs=by_mode)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    sys.stdout.write(f"\nwrote {args.out}\n")
    return 0
