"""The scaling sweep's curve as a PNG (``bench/scale.py``): throughput against tasks with
the ideal (N x the floor) and the target (0.7 of it), CPU per record, and memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: a file

import matplotlib.pyplot as plt  # after the backend is chosen

STYLE = {
    "headwater-par": ("tab:blue", "o"),
    "bytewax-par": ("tab:orange", "s"),
    "floor-par": ("tab:green", "^"),
}


def plot(result: dict[str, Any], path: Path) -> None:
    points = result["points"]
    tasks = [p["tasks"] for p in points]
    runners = [r for r in STYLE if r in points[0]]
    floor = [p["floor_per_s"] for p in points]
    fig, (rate, cpu, rss) = plt.subplots(1, 3, figsize=(15, 4.6), dpi=100)
    rate.plot(tasks, [n * f for n, f in zip(tasks, floor, strict=True)], "k:", label="N x floor")
    rate.plot(
        tasks,
        [0.7 * n * f for n, f in zip(tasks, floor, strict=True)],
        "k--",
        lw=0.8,
        label="0.7 x N x floor",
    )
    rate.plot(tasks, floor, color="grey", marker=".", label="floor (1 process)")
    for r in runners:
        colour, marker = STYLE[r]
        rate.plot(tasks, [p[r]["per_s"] for p in points], color=colour, marker=marker, label=r)
        cpu.plot(tasks, [p[r]["run_cpu_us"] for p in points], color=colour, marker=marker, label=r)
        rss.plot(tasks, [p[r]["peak_rss_mb"] for p in points], color=colour, marker=marker, label=r)
    unit = result["unit"]
    for ax, title, ylabel in (
        (rate, f"throughput ({unit})", unit),
        (cpu, "CPU per record while running", "µs"),
        (rss, "peak RSS, all processes", "MB"),
    ):
        ax.set_title(title)
        ax.set_xlabel("tasks per stage / workers")
        ax.set_ylabel(ylabel)
        ax.set_xscale("log", base=2)
        ax.set_xticks(tasks, [str(n) for n in tasks])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    where = result["machine"]
    left = result.get("left_out")
    fig.suptitle(
        f"{result['pipeline']}, {result['size']:,} records: "
        f"{where['nproc']} cores, {where['cpu_model']}"
        + (f"; left out {left['points']} ({left['why']})" if left else "")
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
