"""The shell blocks of README.md and docs/, run as written, in order (a doc test).

Every ```sh block of README.md and of ``docs/**/*.md`` is run here, or by the test named
in ``ELSEWHERE`` (which reads the same block), or is named in ``NOT_RUN`` with the reason:
a new block without a runner fails ``test_every_readme_block_is_run``. Each block runs in
a fresh home folder (so ``~/.local/state/headwater`` is its own) from a folder holding a
copy of ``examples/``; the daemons and runs it starts are stopped at its end. The master
listens on its default ports, as the docs have it.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .._workers import DEFAULT_PORTS
from ._readme import CLI_POLL, ROOT, ReadmeShell, block, command_of, readme_blocks
from ._support import wait_for

# the README runs its daemons on their default ports: one test at a time (DEFAULT_PORTS)
pytestmark = [pytest.mark.cluster, DEFAULT_PORTS]

ELSEWHERE = {
    # line 1's `headwater demo`: test_demo.py; line 2 is what .ci/run runs (checked below)
    "Headwater #0": "tests/integration/test_demo.py",
    "Change it while it runs #0": "tests/integration/test_readme_live_edits.py",
    # docs/live-edits.md's moves: `headwater move mover tag --to edge|cloud` on the `mover`
    # topology, and the IoT windows' --dry-run (tests/cloud/test_moves.py, through the CLI)
    "Change it while it runs #1": "tests/integration/test_moves.py",
    "Run it on Docker #0": "tests/integration/test_compose.py",
    "High availability #0": "tests/integration/test_compose_ha.py",
    "Self-regulation #0": "tests/integration/test_health.py",
}
RUN_HERE = {
    "Run a topology #0",
    "Run a cluster of daemons #0",
    "Run a cluster of daemons #1",
    "The IoT example #0",
    "The cloud loop on Spark #0",
    "Your own data on Spark #0",
}
# shown for a reader to adapt, not run as written (placeholders, half-hour runs)
NOT_RUN = {
    # docs/security.md: `headwater token revoke ID` names a placeholder; the token routes
    # and their roles are tests/cloud/test_rest_auth.py's
    "REST API #0",
    # docs/testing.md: half an hour of fuzzing, a corpus and a finding of the reader's own;
    # tests/test_fuzz_harnesses.py runs each harness on its seeds
    "Fuzzing (the project's own inputs from outside) #0",
}
COMPOSE = "deploy/compose/build && cd deploy/compose && docker-compose up -d"
COMPOSE_HA = (
    "cd deploy/compose && docker-compose -f docker-compose.yml -f docker-compose.ha.yml up -d"
)


def test_every_readme_block_is_run() -> None:
    keys = [b.key for b in readme_blocks()]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(ELSEWHERE) | RUN_HERE | NOT_RUN, "an sh block without a runner"
    for test in ELSEWHERE.values():
        assert (ROOT / test).exists(), test
    # what test_compose.py runs (deploy/compose/build, then `up -d` in deploy/compose)
    assert [command_of(c) for c in block("Run it on Docker #0").lines] == [COMPOSE]
    # what test_compose_ha.py runs (its FILES, `up -d` in deploy/compose)
    assert [command_of(c) for c in block("High availability #0").lines] == [COMPOSE_HA]


def test_the_readme_test_command_is_what_ci_runs() -> None:
    demo, tests = block("Headwater #0").lines
    assert command_of(demo) == "pip install -e '.[cloud]' && headwater demo"
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [s.strip() for s in tests.split("#")[0].split("&&")]
    assert steps == ["scripts/install-system-deps", "pip install -e '.[dev]'", "scripts/test"]
    assert "\nscripts/install-system-deps\n" in ci
    assert "\npython3 -m pip install -q -e '.[dev]'\n" in ci
    assert ci.rstrip().endswith("\nscripts/test")


def _real_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[ReadmeShell]:
    home, work, logs = tmp_path / "home", tmp_path / "work", tmp_path / "logs"
    for d in (home, work, logs):
        d.mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(_real_cache())  # Spark's class archive: the suite's one
    sh = ReadmeShell(work, env, logs)
    try:
        yield sh
    finally:
        sh.stop()


def test_run_a_topology(shell: ReadmeShell) -> None:
    blk = block("Run a topology #0")
    shell.run(blk, {"headwater run ": lambda: shell.ok("headwater status")})
    status, deactivated = shell.outputs["headwater status"], shell.outputs["headwater deactivate"]
    assert "wordcount" in status and "lines" in status and "split" in status
    assert deactivated == "wordcount: PAUSED\n"
    (run,) = shell.background
    assert run.proc.wait(120) == 0, run.log.read_text()[-3000:]
    out = run.log.read_text()
    assert "logs kept in" in out.splitlines()[-1]
    kept = Path(out.splitlines()[-1].split("logs kept in", 1)[1].strip())
    assert sorted(p.name for p in kept.glob("container-*.log")) == [
        "container-0.log",
        "container-1.log",
    ]


def _nodes(sh: ReadmeShell) -> list[dict[str, object]]:
    out = sh.ok("headwater nodes --json")
    return json.loads(out) if out else []


def _master_ready(sh: ReadmeShell) -> bool:
    token = Path(sh.env["HOME"]) / ".local/state/headwater/master/admin.token"
    try:
        with urllib.request.urlopen("http://127.0.0.1:7071/api/v1/openapi.json", timeout=5):
            return token.exists()
    except OSError:
        return False


def test_run_a_cluster_of_daemons_then_one_on_docker(shell: ReadmeShell) -> None:
    daemons = block("Run a cluster of daemons #0")
    shell.run(
        daemons,
        {
            "headwater master": lambda: _master_ready(shell),
            "headwater worker": lambda: any(n.get("online") for n in _nodes(shell)),
        },
        before={"headwater logs": lambda: shell.ok("headwater logs wordcount/0 --tail 1")},
    )
    out = shell.outputs
    assert "wordcount" in out["headwater submit examples/iot/wordcount.py --containers 2"]
    assert "wordcount" in out["headwater status wordcount"]
    assert out["headwater logs wordcount/0 --tail 100"].strip()
    assert "online" in out["headwater nodes"]
    assert "killed 'wordcount'" in out["headwater kill wordcount"]
    codes = shell.stop()
    assert set(codes.values()) == {0}, codes

    docker = block("Run a cluster of daemons #1")
    subprocess.run(["docker", "network", "rm", "hw"], capture_output=True, check=False)
    try:
        shell.outputs.clear()
        shell.run(
            docker,
            {"headwater master": lambda: _master_ready(shell)},
            before={"headwater logs": lambda: shell.ok("headwater logs wordcount/0 --tail 1")},
        )
        assert shell.outputs["headwater logs wordcount/0 --tail 100"].strip()
        assert "killed 'wordcount'" in shell.outputs["headwater kill wordcount"]
        wait_for(
            lambda: (
                not subprocess.run(
                    ["docker", "ps", "-aq", "--filter", "label=io.headwater.topology=wordcount"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
            ),
            60,
            "its containers removed",
        )
    finally:
        shell.stop()
        subprocess.run(["docker", "network", "rm", "hw"], capture_output=True, check=False)


def _online(sh: ReadmeShell, kind: str) -> bool:
    return any(bool(n.get("online")) and n.get("kind") == kind for n in _nodes(sh))


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _landed(sh: ReadmeShell) -> list[dict[str, Any]]:
    out = sh.ok("headwater read iot-out/landing/readings --format landing")
    return [json.loads(line) for line in (out or "").splitlines()]


GRPC_FORK_NOTICES = ("fork_posix", "Other threads are currently calling into gRPC", "fork()")


def test_the_iot_example_on_a_gateway_then_the_spark_loop(shell: ReadmeShell) -> None:
    """A broker, a master, a worker and an agent; the IoT example submitted; sensors on the
    agent's site; its windows read; then the Spark loop on what landed: rollups, a model
    trained and registered, rolled out to the agent and back. Every reading the sensors had
    acknowledged lands once."""
    daemons = {
        "mosquitto": lambda: _listening(1883),
        "headwater master": lambda: _master_ready(shell),
        "headwater worker": lambda: _online(shell, "worker"),
        "headwater agent": lambda: _online(shell, "agent"),
        "headwater sensors": lambda: True,
    }
    shell.run(
        block("The IoT example #0"),
        daemons,
        before={"headwater read iot-out/site_windows": lambda: shell.ok(READ_FIVE) is not None},
    )
    windows = shell.outputs["headwater read iot-out/site_windows --limit 5"].splitlines()
    assert len(windows) == 5 and all(json.loads(w)["site"] == "site0" for w in windows)
    assert "iot" in shell.outputs["headwater status iot"]

    shell.run(
        block("The cloud loop on Spark #0"),
        {},
        before={"headwater spark train": lambda: len(_landed(shell)) >= 300},
    )
    out = shell.outputs
    assert (shell.cwd / "warehouse" / "hourly_site").is_dir()
    assert "iot-anomaly" in out["headwater models list"]
    assert json.loads((shell.cwd / "iot-anomaly.json").read_text())["name"] == "iot-anomaly"

    sensors = next(bg for bg in shell.background if bg.line.startswith("headwater sensors"))
    os.killpg(sensors.proc.pid, signal.SIGTERM)
    assert sensors.proc.wait(30) == 0, sensors.log.read_text()[-2000:]
    kept = json.loads(
        (Path(shell.env["HOME"]) / ".local/state/headwater/sensors/site0.json").read_text()
    )
    published = sum(kept.values())  # each sensor's next seq: its readings from seq 0
    assert published > 300

    def landed_once() -> bool:
        rows = _landed(shell)
        return bool(len(rows) == published)

    wait_for(landed_once, 120, "every acknowledged reading landed", interval=CLI_POLL)
    rows = _landed(shell)
    assert len({(r["sensor"], r["seq"]) for r in rows}) == published, "a reading landed twice"
    agent_log = shell.log_of("headwater agent")
    assert not [n for n in GRPC_FORK_NOTICES if n in agent_log], agent_log[-2000:]


READ_FIVE = "headwater read iot-out/site_windows --limit 5 | grep -c site0 | grep -qx 5"


def _shop_example(out: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``examples/shop/orders.py`` loaded here, for its ``order(i)`` (landing under ``out``)."""
    monkeypatch.setenv("SHOP_OUT", str(out))
    spec = importlib.util.spec_from_file_location("shop_orders", ROOT / "examples/shop/orders.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _warehouse_rows(table: Path) -> list[dict[str, Any]]:
    """A warehouse table's rows, its ``date`` partition as a string, read with pyarrow."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    part = ds.partitioning(pa.schema([("date", pa.string())]), flavor="hive")
    rows: list[dict[str, Any]] = (
        ds.dataset(table, format="parquet", partitioning=part).to_table().to_pylist()
    )
    return rows


def _day(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts / 1000, dt.UTC).strftime("%Y-%m-%d")


def _ms(when: dt.datetime) -> int:
    return int((when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp() * 1000)


def test_your_own_data_on_spark(
    shell: ReadmeShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shop example as the README runs it: the topology lands every order once, in
    order; the rollup by options and the user's job write exactly what a recomputation
    from the landed rows says; each command prints what the README shows."""
    shell.run(block("Your own data on Spark #0"), {})
    out = shell.outputs
    shop = _shop_example(tmp_path / "unused", monkeypatch)
    cols = shop.COLUMNS
    expected = [dict(zip(cols, shop.order(i), strict=True)) for i in range(600)]
    for row in expected:
        row["date"] = _day(row["ts"])

    from headwater.connectors import read_landing

    landed = sorted(
        read_landing(shell.cwd / "shop-out/landing", "orders"), key=lambda r: r["order_id"]
    )
    assert landed == expected
    assert len({r["date"] for r in landed}) == 3 and len({r["shop"] for r in landed}) == 3
    first = out["headwater read shop-out/landing/orders --limit 3"].splitlines()
    assert [json.loads(line) for line in first] == expected[:3]

    # the rollup by options: a row per shop and hour, exact
    hours: dict[tuple[str, int], dict[str, Any]] = {}
    for r in landed:
        start = r["ts"] // 3_600_000 * 3_600_000
        h = hours.setdefault((r["shop"], start), {"orders": 0, "revenue": Decimal(0), "refunds": 0})
        h["orders"] += 1
        h["revenue"] += Decimal(str(r["amount"]))
        h["refunds"] += int(r["refunded"])
    hourly = {
        (r["shop"], _ms(r["window_start"])): {
            "end": _ms(r["window_end"]) - _ms(r["window_start"]),
            "date": r["date"],
            "orders": r["orders"],
            "revenue": Decimal(str(round(r["revenue"], 2))),
            "refunds": r["refunds"],
        }
        for r in _warehouse_rows(shell.cwd / "shop-out/warehouse/hourly_shop")
    }
    assert hourly == {k: {"end": 3_600_000, "date": _day(k[1]), **v} for k, v in hours.items()}
    (rollup,) = [text for cmd, text in out.items() if cmd.startswith("headwater spark rollup")]
    assert "\nhourly: " in rollup and "600 rows rolled up, 0 late rows dropped" in rollup

    # the user's job: a row per shop and day, exact decimals
    days: dict[tuple[str, str], dict[str, Any]] = {}
    for r in landed:
        d = days.setdefault(
            (r["shop"], r["date"]),
            {
                "orders": 0,
                "revenue": Decimal("0.00"),
                "refunds": 0,
                "refunded": Decimal("0.00"),
                "first_ts": r["ts"],
                "last_ts": r["ts"],
            },
        )
        amount = Decimal(str(r["amount"]))
        d["orders"] += 1
        d["revenue"] += amount
        d["refunds"] += int(r["refunded"])
        d["refunded"] += amount if r["refunded"] else 0
        d["first_ts"], d["last_ts"] = min(d["first_ts"], r["ts"]), max(d["last_ts"], r["ts"])
    for d in days.values():
        d["net"] = d["revenue"] - d["refunded"]
    table = _warehouse_rows(shell.cwd / "shop-out/warehouse/daily_shop_revenue")
    assert {(r.pop("shop"), r.pop("date")): r for r in table} == days
    run_job = (
        "headwater spark run examples/shop/revenue.py --landing shop-out/landing "
        "--warehouse shop-out/warehouse"
    )
    job = out[run_job]
    again = shell.check(run_job)  # "run again, it writes the same rows"
    assert "daily_shop_revenue: 9 rows (shop, day) from 600 orders\n" in again
    table = _warehouse_rows(shell.cwd / "shop-out/warehouse/daily_shop_revenue")
    assert {(r.pop("shop"), r.pop("date")): r for r in table} == days
    for date in sorted({r["date"] for r in landed}):
        mine = [v for (_, day), v in days.items() if day == date]
        n, refunds = sum(v["orders"] for v in mine), sum(v["refunds"] for v in mine)
        net = sum(v["net"] for v in mine)
        assert f"{date}: 3 shops, {n} orders, {refunds} refunded, net {net}\n" in job
    assert "daily_shop_revenue: 9 rows (shop, day) from 600 orders\n" in job
    assert "revenue: 600 rows read, 9 rows written in " in job
    read = out[
        "headwater read shop-out/warehouse/daily_shop_revenue/date=2026-11-02/data.parquet"
    ].splitlines()
    as_json = [  # headwater read prints a decimal as its text
        {"shop": name, **{k: str(v) if isinstance(v, Decimal) else v for k, v in d.items()}}
        for (name, day), d in sorted(days.items())
        if day == "2026-11-02"
    ]
    assert [json.loads(line) for line in read] == as_json
