"""The demo's cloud loop beside the pipeline: Spark rollups, training, a canary rollout.

    landing zone -> headwater spark rollup --continuous -> warehouse (hourly, daily)
      -> headwater spark train (once enough history has landed) -> the master's registry
      -> headwater models rollout (site0 first, then both) -> the agents' anomaly step

Each step is the product's own command, run as a process beside the daemons
(its log in the demo's folder); ``step()`` moves the loop on and says what
happened, ``report()`` prints the warehouse's latest hourly rows.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headwater.common.runtime._procs import spawn, terminate

MODEL = "iot-anomaly"
# the example's rollups (headwater/examples links to examples/, shipped in the package)
ROLLUP_SPEC = Path(__file__).resolve().parents[1] / "examples" / "iot" / "rollup.toml"
# what Spark's JVM says on its own (log4j's start-up lines, timestamped warnings)
_SPARK_NOISE = re.compile(r"^\d\d/\d\d/\d\d \d\d:|log4j|setLogLevel|^WARNING|^Setting default log")
HISTORY_READINGS = 1500  # readings landed before the model is trained (250 per sensor)


class SparkLoop:
    """The rollup, then a training run, then a rollout: one at a time, each a process."""

    def __init__(
        self,
        work: Path,
        out: Path,
        master_http: str,
        token_file: Path,
        say: Callable[[str], None],
        per_s: float,
    ) -> None:
        """``per_s``: the readings the sensors send a second (when history will have landed)."""
        self.work, self.out, self.http, self.token_file = work, out, master_http, token_file
        self.say, self.per_s = say, per_s
        self.warehouse = out / "warehouse"
        self.rollup: subprocess.Popen[bytes] | None = None
        self.job: subprocess.Popen[bytes] | None = None  # the training run, then the rollout
        self.phase = "history"  # -> training -> rolling out -> done (or failed)
        self._shown: dict[Path, int] = {}  # how much of each log was printed
        self._next_step = 0.0

    def _cli(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = self.work / f"{name}.log"
        self._shown[log] = 0
        return spawn(["-m", "headwater", *args], log_path=str(log))

    def start(self) -> None:
        import importlib.util

        if importlib.util.find_spec("pyspark") is None:
            self.phase = "off"
            self.say(
                "  Spark: PySpark is not installed, so no rollups, training or rollout: "
                "pip install 'headwater[cloud]'"
            )
            return
        self.say(
            f"  Spark: once readings land, `headwater spark rollup --continuous` rolls them up "
            f"into {self.warehouse} (hourly and daily, per site and per sensor)"
        )
        self.say(
            f"  model: `headwater spark train` fits `{MODEL}` once {HISTORY_READINGS:,} readings "
            f"have landed (in about {_minutes(HISTORY_READINGS / self.per_s)} at "
            f"{self.per_s:g} readings a second); its progress shows here (a line per stage: "
            "starting Spark, reading the landing, fitting, evaluating, exporting, registering); "
            "then it is rolled out to site0 (canary), then to both sites"
        )

    def _start_rollup(self) -> None:
        self.rollup = self._cli(
            "rollup",
            "spark",
            "rollup",
            "--landing",
            str(self.out / "landing"),
            "--warehouse",
            str(self.warehouse),
            "--spec",
            str(ROLLUP_SPEC),
            "--continuous",
            "--interval",
            "5",
            "--watermark",
            "1 hour",
        )

    def _auth(self) -> tuple[str, ...]:
        return ("--master", self.http, "--token-file", str(self.token_file))

    def step(self) -> None:
        """Move the loop on: train once enough has landed, roll the model out once trained."""
        if time.monotonic() < self._next_step:
            return
        self._next_step = time.monotonic() + 1.0
        if self.phase == "off":
            return
        if self.rollup is None and (self.out / "landing" / "readings" / "_manifests").is_dir():
            self._start_rollup()
        if self.phase == "history" and self._landed() >= HISTORY_READINGS:
            self.say(
                f"  training `{MODEL}` with Spark MLlib on {self._landed():,} landed readings "
                f"(its log: {self.work / 'train.log'})"
            )
            self.job = self._cli(
                "train",
                "spark",
                "train",
                "--landing",
                str(self.out / "landing"),
                "--name",
                MODEL,
                "--out",
                str(self.work / f"{MODEL}.json"),
                *self._auth(),
            )
            self.phase = "training"
        elif self.phase == "training" and self.job is not None:
            self._echo(self.work / "train.log", "  train: ")  # its progress, as it comes
            if self.job.poll() is None:
                return
            self._echo(self.work / "train.log", "  train: ")
            version = self._trained_version()
            if self.job.returncode != 0 or version is None:
                self.say(f"  training failed; see {self.work / 'train.log'}")
                self.phase = "failed"
                return
            self.say(f"  rolling out {MODEL} v{version}: site0 first (canary), then both sites")
            self.job = self._cli(
                "rollout",
                "models",
                "rollout",
                MODEL,
                str(version),
                "--topology",
                "iot",
                "--component",
                "anomaly",
                "--canary",
                "site=site0",
                "--watch",
                "10",
                *self._auth(),
            )
            self.phase = "rolling out"
        elif self.phase == "rolling out" and self.job is not None:
            self._echo(self.work / "rollout.log", "  rollout: ")
            if self.job.poll() is not None:
                self.phase = "done" if self.job.returncode == 0 else "failed"

    def _landed(self) -> int:
        from headwater.common.connectors import manifests

        try:
            return sum(int(m["rows"]) for m in manifests(self.out / "landing", "readings"))
        except (OSError, ValueError):
            return 0

    def _trained_version(self) -> int | None:
        for line in (self.work / "train.log").read_text(errors="replace").splitlines():
            if line.startswith("registered ") and " version " in line:
                return int(line.rsplit(" version ", 1)[1].split()[0])
        return None

    def _echo(self, log: Path, prefix: str) -> None:
        """Print what ``log`` gained since the last call, each line under ``prefix``."""
        try:
            text = log.read_text(errors="replace")
        except OSError:
            return
        new = text[self._shown.get(log, 0) :]
        complete = new[: new.rfind("\n") + 1]
        self._shown[log] = self._shown.get(log, 0) + len(complete)
        for line in complete.splitlines():
            if line.strip() and not _SPARK_NOISE.search(line):
                self.say(prefix + line)

    def report(self) -> None:
        from headwater.cloud.spark._warehouse import read_table

        if self.phase == "history":
            landed = self._landed()
            self.say(
                f"  model: waiting for history: {landed:,} of {HISTORY_READINGS:,} readings "
                f"landed (training in about "
                f"{_minutes(max(0, HISTORY_READINGS - landed) / self.per_s)})"
            )
        try:
            hourly = read_table(self.warehouse / "hourly_site").to_pylist()
            daily = read_table(self.warehouse / "daily_site").to_pylist()
        except OSError:
            return  # a partition being replaced: the next report shows it
        latest: dict[str, dict[str, Any]] = {}
        for row in hourly:
            site = str(row["site"])
            if site not in latest or row["window_start"] > latest[site]["window_start"]:
                latest[site] = row
        if not latest:
            if self.rollup is not None:
                self.say("  rollup: no hourly rows yet (Spark is starting)")
            return
        self.say(f"  rollup: {len(hourly)} hourly and {len(daily)} daily site rows so far")
        for site, row in sorted(latest.items()):
            self.say(
                f"    {site} hour {row['window_start']:%Y-%m-%d %H:00} UTC: {row['count']} "
                f"readings, mean {row['mean']:.2f}, p95 {row['p95']:.2f}, "
                f"anomaly rate {row['anomaly_rate']:.1%}"
            )

    def stop(self) -> None:
        terminate([p for p in (self.job, self.rollup) if p is not None], 15.0)


def _minutes(seconds: float) -> str:
    """``40 s`` under a minute and a half, else ``3 min``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"
