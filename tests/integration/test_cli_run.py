"""Acceptance 2: `headwater run` of the word count example, its processes, and clean stops."""

from __future__ import annotations

import json
import os
import runpy
import signal
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from headwater.cloud.local import state_dir
from headwater.cloud.local._logs import recorded_runs

from ._support import EXAMPLES, wait_for

WORDCOUNT = EXAMPLES / "iot" / "wordcount.py"
pytestmark = pytest.mark.cluster


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater", "run", *args],
        env={**os.environ, "WORDCOUNT_RATE": "0", **env},  # the word count unpaced
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _record() -> dict[str, str] | None:
    files = list(state_dir().glob("*.json"))
    return json.loads(files[0].read_text()) if files else None


def _tasks(record: dict[str, str], name: str) -> dict[str, dict[str, float]]:
    """Its tasks' metrics, asked with the token the run keeps beside its record."""
    token = Path(record["token_file"]).read_text().strip()
    req = urllib.request.Request(
        f"{record['http']}/api/v1/topologies/{name}/metrics",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())["tasks"]  # type: ignore[no-any-return]


def _scrape(record: dict[str, str], token: str | None) -> tuple[int, str]:
    """``GET /metrics`` of the run's topology master: (status, body)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(f"{record['http']}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _counts(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for f in out.glob("count-*.json"):
        total.update(json.loads(f.read_text()))
    return total


def test_wordcount_runs_one_process_per_instance_and_counts_exactly(out_dir: Path) -> None:
    proc = _start(
        [str(WORDCOUNT), "--containers", "2", "--duration", "20"],
        {"WORDCOUNT_OUTPUT": str(out_dir)},
    )
    try:
        record = wait_for(_record, 30, "the run to record its topology master")

        def connected() -> dict[str, dict[str, float]] | None:
            t = _tasks(record, "wordcount")
            ok = all(m.get("connected") == 1.0 and "pid" in m for m in t.values())
            return t if ok else None

        tasks = wait_for(connected, 30, "every instance to connect")
        launcher = psutil.Process(proc.pid)
        children = launcher.children(recursive=True)
        containers = [p for p in children if "headwater.common.runtime.container" in p.cmdline()]
        # each container forks its instances from its fork server (--fork-instances): a child
        # of the container that imported an instance once, with which it dies
        stmgrs = {c.pid for c in containers}
        servers = [
            p
            for p in children
            if "headwater.common.runtime._forkserver" in p.cmdline() and p.ppid() in stmgrs
        ]
        instances = [p for s in servers for p in s.children()]
        assert len(containers) == 2  # one stmgr per container
        assert len(servers) == 2  # one fork server per container
        assert len(tasks) == 6  # lines x2, split x2, count x2
        pids = {int(m["pid"]) for m in tasks.values()}
        assert pids == {p.pid for p in instances}  # one OS process per instance
        for task, m in tasks.items():  # named for its task in ps and top
            assert psutil.Process(int(m["pid"])).name() == f"hw-task-{task}"
        # its /metrics, with the run's token: every task, labelled
        assert _scrape(record, None)[0] == 401
        status, text = _scrape(record, Path(record["token_file"]).read_text().strip())
        assert status == 200
        labelled = {
            (s.labels["component"], s.labels["task"])
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name == "headwater_task_connected"
            and s.labels["topology"] == "wordcount"
            and s.labels["domain"] == "cloud"
            and s.value == 1.0
        }
        assert labelled == {(str(m["component"]), task) for task, m in tasks.items()}
        expected = runpy.run_path(str(WORDCOUNT))["expected_counts"]()
        wait_for(lambda: _counts(out_dir) == Counter(expected), 30, "the exact word counts")
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    assert "stopped" in out
    gone = psutil.wait_procs([psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)], 5)
    assert not gone[1], "instances survived the run"
    assert _counts(out_dir) == Counter(expected)  # totals written again on close: unchanged


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_stops_cleanly_on_signal(sig: signal.Signals, out_dir: Path) -> None:
    proc = _start(
        [str(WORDCOUNT), "--containers", "2", "--quiet"], {"WORDCOUNT_OUTPUT": str(out_dir)}
    )
    try:
        record = wait_for(_record, 30, "the run to start")
        wait_for(
            lambda: all(m.get("connected") == 1.0 for m in _tasks(record, "wordcount").values()),
            30,
            "every instance to connect",
        )
        status = subprocess.run(
            [sys.executable, "-m", "headwater", "status"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        assert "topology wordcount  state RUNNING" in status
        # its topology master asks for a token; the run's (0600, beside its record) serves
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{record['http']}/api/v1/topologies", timeout=5)
        refused.value.close()
        assert refused.value.code == 401
        assert stat.S_IMODE(os.stat(record["token_file"]).st_mode) == 0o600
        for verb, state in (("deactivate", "PAUSED"), ("activate", "RUNNING")):
            changed = subprocess.run(
                [sys.executable, "-m", "headwater", verb],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout
            assert changed == f"wordcount: {state}\n"
        for column in ("emitted", "executed", "acked", "failed", "bp ms", "restarts"):
            assert column in status
        assert all(name in status for name in ("lines", "split", "count"))
        raw = json.loads(
            subprocess.run(
                [sys.executable, "-m", "headwater", "status", "--json"],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout
        )
        task = next(iter(raw["metrics"]["tasks"].values()))
        for key in (
            "emitted",
            "executed",
            "acked",
            "failed",
            "execute_latency_us",
            "in_queue_bytes",
            "out_queue_bytes",
            "backpressure_ms",
            "pid",
        ):
            assert key in task
        stmgr = raw["metrics"]["containers"]["0"]
        for key in (
            "bytes_in",
            "bytes_out",
            "batches_in",
            "batches_out",
            "buffer_bytes",
            "backpressure_ms",
        ):
            assert key in stmgr
        everyone = psutil.Process(proc.pid).children(recursive=True)
        assert len(everyone) == 1 + 2 + 2 + 6  # tmaster, stmgrs, their fork servers, instances
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    _, alive = psutil.wait_procs(everyone, timeout=5)
    assert not alive, f"left behind: {[p.pid for p in alive]}"
    assert _record() is None  # the status record is removed with the cluster


def test_run_insecure_warns_and_runs_in_plaintext(out_dir: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "run"
    args = [str(WORDCOUNT), "--containers", "2", "--duration", "15", "--insecure", "--quiet"]
    proc = _start([*args, "--workdir", str(workdir)], {"WORDCOUNT_OUTPUT": str(out_dir)})
    try:
        record = wait_for(_record, 30, "the run to record its topology master")
        # development only: its topology master's API asks for no token
        url = f"{record['http']}/api/v1/topologies/wordcount/metrics"

        def connected() -> bool:
            with urllib.request.urlopen(url, timeout=5) as r:
                tasks = json.loads(r.read())["tasks"]
            return len(tasks) == 6 and all(m.get("connected") == 1.0 for m in tasks.values())

        wait_for(connected, 30, "every instance to connect over plaintext links")
        children = psutil.Process(proc.pid).children(recursive=True)
        daemons = [
            p
            for p in children
            if {"headwater.cloud.tmaster", "headwater.common.runtime.container"} & set(p.cmdline())
        ]
        assert len(daemons) == 3  # the topology master and two containers
        assert all("--insecure" in p.cmdline() for p in daemons)
        assert not any("--tls-dir" in p.cmdline() for p in daemons)
        expected = runpy.run_path(str(WORDCOUNT))["expected_counts"]()
        wait_for(lambda: _counts(out_dir) == Counter(expected), 30, "the exact word counts")
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    assert "headwater run: WARNING: --insecure: its links are plaintext" in out
    assert "stopped" in out
    assert not (workdir / "tls").exists()  # no credentials were made
    assert _counts(out_dir) == Counter(expected)


LOGGED = """
from headwater.dsl import Pipeline

p = Pipeline("logged")
p.from_collection("numbers", [1, 2, 3]).log("seen").sink("drop", lambda value: None)
topology = p.build()
"""


@pytest.mark.parametrize("keep", [True, False])
def test_a_run_keeps_its_logs_and_says_where(keep: bool, tmp_path: Path) -> None:
    """A streamlet's log() output outlives the run (in its work directory's task logs, as
    Heron's and Flink's local modes keep theirs), unless --no-keep-logs; the run's state,
    credentials and tokens go either way."""
    (tmp_path / "logged.py").write_text(LOGGED)
    proc = _start(
        [str(tmp_path / "logged.py"), "--quiet", *([] if keep else ["--no-keep-logs"])], {}
    )
    try:
        assert proc.stdout is not None
        lines = iter(proc.stdout.readline, "")
        workdir = Path(next(line for line in lines if line.startswith("  logs: "))[8:].strip())

        def logged() -> bool:
            return any(
                "seen: 3" in p.read_text(errors="replace") for p in workdir.glob("task-*.log")
            )

        wait_for(logged, 30, "the log step's lines in a task log")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    if keep:
        assert out.endswith(f"stopped\nlogs kept in {workdir}\n")
        kept = sorted(p.name for p in workdir.iterdir())
        assert all(name.endswith(".log") for name in kept), kept
        assert {"tmaster.log", "container-0.log"} <= set(kept)
        assert logged()
    else:
        assert out.endswith("stopped\n")
        assert not workdir.exists()
    # where `headwater logs` finds them: recorded, marked ended; or gone with them
    runs = recorded_runs(state_dir())
    if keep:
        assert [(r.topology, r.workdir, r.running) for r in runs.values()] == [
            ("logged", workdir, False)
        ]
    else:
        assert runs == {}


@pytest.mark.parametrize("example", ["pipeline.py", "pipeline_dsl.py"])
def test_the_iot_example_without_a_log_says_what_to_set(example: str, tmp_path: Path) -> None:
    """Without IOT_LOG (and not on an agent) the IoT example says at once what to set, and
    its readings spout refuses to open, so the run ends with that cause instead of idling on
    a log that does not exist; without IOT_OUT it writes under ./iot-out, and says so."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("IOT_LOG", "IOT_OUT", "HEADWATER_INGEST_LOG")
    }
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "run", str(EXAMPLES / "iot" / example), "--quiet"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    need = (
        "no ingest log to read: set IOT_LOG to the folder of a durable log of readings (an "
        "agent's ingest/ in its --workdir, or the folder an MqttIngest writes), or submit the "
        "topology to a master with agents, whose edge half reads the agent's own log"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stderr.splitlines()
    assert said[:2] == [
        f"IOT_LOG is not set: {need}",
        f"IOT_OUT is not set: the IoT example writes its outputs under {tmp_path / 'iot-out'}",
    ]
    assert "component 'readings' (task 1) is crash-looping" in said[2]
    assert f"  ValueError: {need}" in said
    assert "/var/lib/headwater" not in done.stdout + done.stderr
