"""BeatWatch: silence measured on the monotonic clock, a wall-clock step changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from headwater.common.runtime._procs import BeatWatch


def test_silence_counts_from_the_last_change_on_the_monotonic_clock(tmp_path: Path) -> None:
    now = [1000.0]
    watch = BeatWatch(clock=lambda: now[0])
    beat = tmp_path / "c0.alive"
    proc = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        beat.touch()
        assert watch.silent(proc, beat, 15.0) == 0.0  # first seen
        now[0] += 14.0
        assert watch.silent(proc, beat, 15.0) == 0.0
        os.utime(beat, (time.time() + 1, time.time() + 1))  # it beat
        now[0] += 10.0
        assert watch.silent(proc, beat, 15.0) == 0.0
        now[0] += 16.0
        assert watch.silent(proc, beat, 15.0) == 16.0
        # the wall clock stepped an hour ahead: a file's age in wall time is no silence
        os.utime(beat, (time.time() + 3600, time.time() + 3600))
        assert watch.silent(proc, beat, 15.0) == 0.0
        watch.kill_if_silent(proc, beat, 15.0, "container 0")
        assert proc.poll() is None
        now[0] += 20.0
        watch.kill_if_silent(proc, beat, 15.0, "container 0")  # killed, never waited for
        assert proc.wait(10) == -9
    finally:
        proc.kill()
        proc.wait()


def test_a_previous_incarnations_file_is_not_silence(tmp_path: Path) -> None:
    now = [0.0]
    watch = BeatWatch(clock=lambda: now[0])
    beat = tmp_path / "c0.alive"
    beat.touch()
    os.utime(beat, (time.time() - 600, time.time() - 600))  # older than the process
    proc = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        watch.silent(proc, beat, 15.0)
        now[0] += 100.0
        assert watch.silent(proc, beat, 15.0) == 0.0
    finally:
        proc.kill()
        proc.wait()
