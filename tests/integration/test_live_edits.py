"""Issue 6: attach, replace and remove subgraphs of a running topology, exactly once."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from headwater._demo.linkproxy import LinkProxy
from headwater.common._package import build_package
from headwater.common.connectors._log_spout import append_records

from .._ports import free_port
from . import _editable, _editable_edge
from ._daemons import Daemons
from ._support import committed_rows, wait_for
from .test_edge_cloud import SITES, Sensors, SteadySensors, _agent_args, _node, _status

pytestmark = pytest.mark.cluster
KEYS = 4


def _produce(log: Path, start: int, n: int) -> None:
    append_records(log, 0, [[f"k{i % KEYS}", i] for i in range(start, start + n)])


def _start(daemons: Daemons, tmp: Path, rate: float) -> dict[str, str]:
    env = {
        "HW_TEST_LOG": str(tmp / "log"),
        "HW_TEST_OUT": str(tmp / "out"),
        "HW_TEST_RATE": str(rate),
    }
    daemons.start_master()
    for name in ("w1", "w2"):
        daemons.start_worker(name, env)
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "two workers online",
    )
    return env


def _edit(daemons: Daemons, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *(sys.executable, "-m", "headwater", *args),
            *("--master", daemons.http, "--token", daemons.token),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _current(daemons: Daemons) -> int:
    return int(daemons.api("/api/v1/topologies/editable/revisions")["current"])


def _check_counter(out: Path, n: int) -> list[int]:
    """Every record once at the counter's sink, counts continuing; the versions in seq order.
    (A DSL sink's rows are ``[key, row]``.)"""
    rows = [r[1] if isinstance(r[1], list) else r for r in committed_rows(out / "counter")]
    seqs = sorted(r[1] for r in rows)
    assert seqs == list(range(n)), "gaps or duplicates at the counter"
    by_key: dict[str, list[list[Any]]] = defaultdict(list)
    for r in rows:
        by_key[r[0]].append(r)
    for key, krows in by_key.items():
        krows.sort(key=lambda r: r[1])
        assert [r[2] for r in krows] == list(range(1, len(krows) + 1)), f"{key}: count broke"
    versions = [r[3] for r in sorted(rows, key=lambda r: r[1])]
    runs = [v for i, v in enumerate(versions) if i == 0 or v != versions[i - 1]]
    return runs


def test_twenty_random_live_edits_process_every_record_once(
    daemons: Daemons, tmp_path: Path
) -> None:
    # a third of the records first, then a share after each edit: every revision has
    # records to handle however long the edits take (all at once, on a loaded machine the
    # records ran out before the last versions were applied)
    n, first, per_edit = 24_000, 8_000, 800
    _produce(tmp_path / "log", 0, first)
    _start(daemons, tmp_path, rate=400)
    code = tmp_path / "code"
    version, next_tap, parallelism = 1, 0, 2
    taps: list[int] = []
    base = _editable.write(code / "r1", version, taps)
    daemons.cli("submit", str(base), "--containers", "2")
    wait_for(lambda: committed_rows(tmp_path / "out" / "counter"), 60, "the first committed rows")

    rng = random.Random(6)
    applied_versions = [1]
    tap_spans: dict[int, tuple[int, int | None]] = {}  # tap -> (attached at rev, removed at)
    for i in range(20):
        kinds = ["attach", "replace"] + (["remove"] if taps else [])
        kind = rng.choice(kinds)
        rev = _current(daemons)
        folder = code / f"e{i}"
        if kind == "attach":
            next_tap += 1
            taps.append(next_tap)
            f = _editable.write(folder, version, taps, parallelism=parallelism)
            res = _edit(
                daemons,
                "attach",
                "editable",
                str(f),
                "--base",
                str(rev),
                "--components",
                f"tap_{next_tap},tap_{next_tap}_sink",
            )
            tap_spans[next_tap] = (rev + 1, None)
        elif kind == "replace":
            version += 1
            parallelism = rng.choice([1, 2, 3])  # its keyed counts follow the keys
            f = _editable.write(folder, version, taps, parallelism=parallelism)
            res = _edit(
                daemons,
                "replace",
                "editable",
                str(f),
                "--base",
                str(rev),
                "--components",
                "counter",
                "--author",
                "test",
            )
            applied_versions.append(version)
        else:
            gone = rng.choice(taps)
            taps.remove(gone)
            names = [f"tap_{gone}", f"tap_{gone}_sink"]
            if rng.random() < 0.5:  # with the file as it now is, or by name alone
                f = _editable.write(folder, version, taps, parallelism=parallelism)
                res = _edit(
                    daemons, "remove", "editable", *names, "--file", str(f), "--base", str(rev)
                )
            else:
                res = _edit(daemons, "remove", "editable", *names, "--base", str(rev))
            tap_spans[gone] = (tap_spans[gone][0], rev + 1)
        assert res.returncode == 0, f"edit {i} ({kind}): {res.stdout}{res.stderr}"
        assert "applied" in res.stdout, res.stdout
        assert _current(daemons) == rev + 1
        _produce(tmp_path / "log", first + i * per_edit, per_edit)

    history = daemons.api("/api/v1/topologies/editable/revisions")["revisions"]
    assert [r["status"] for r in history] == ["applied"] * 21
    assert history[3]["hash"].startswith("sha256:") and history[3]["diff"]
    wait_for(lambda: len(committed_rows(tmp_path / "out" / "counter")) >= n, 180, "every record")
    assert _check_counter(tmp_path / "out", n) == applied_versions

    switch_seq: dict[int, int] = {}  # the first seq each revision's code handled, from taps
    for tap, (start, end) in tap_spans.items():
        seqs = sorted(r[1] for r in committed_rows(tmp_path / "out" / f"tap_{tap}"))
        if not seqs:
            continue  # attached and removed between two records
        assert seqs == list(range(seqs[0], seqs[-1] + 1)), f"tap {tap}: gaps or duplicates"
        if end is None:
            assert seqs[-1] == n - 1, f"tap {tap} lost the tail"
        switch_seq[start] = seqs[0]
    assert switch_seq  # some tap saw records


def test_a_rescale_runs_the_same_code_on_other_tasks_and_keeps_every_count(
    daemons: Daemons, tmp_path: Path
) -> None:
    """``replace --parallelism``: no file, the running code on 3 counter tasks, then 1; every
    record counted once, the keyed counts continuing across both switches."""
    n = 6_000
    _produce(tmp_path / "log", 0, n)
    _start(daemons, tmp_path, rate=300)
    daemons.cli("submit", str(_editable.write(tmp_path / "code", 1, [])), "--containers", "2")
    wait_for(lambda: committed_rows(tmp_path / "out" / "counter"), 60, "the first committed rows")

    def counters() -> int:
        plan = daemons.api("/api/v1/topologies/editable/plan")
        return sum(1 for i in plan["instances"] if i["component"] == "counter")

    assert counters() == 2
    for rev, tasks in ((1, 3), (2, 1)):
        res = _edit(
            daemons, "replace", "editable", "--parallelism", f"counter={tasks}", "--base", str(rev)
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"revision {rev + 1} accepted: replaced counter" in res.stdout, res.stdout
        assert f"revision {rev + 1} applied" in res.stdout, res.stdout
        assert counters() == tasks
    refused = _edit(daemons, "replace", "editable", "--parallelism", "counter=1", "--base", "3")
    assert refused.returncode == 2 and "nothing to change" in refused.stderr, refused
    wait_for(lambda: len(committed_rows(tmp_path / "out" / "counter")) >= n, 180, "every record")
    assert _check_counter(tmp_path / "out", n) == [1]  # one version of the code throughout


def test_a_rescale_reroutes_a_running_dsl_chain_and_keeps_every_count(
    daemons: Daemons, tmp_path: Path
) -> None:
    """The same rescale of a DSL pipeline: its source chain keeps running and emits through
    an emit bound once at its start, which must route to the counter's new tasks from the
    switch on (never to the retired ones, never by the old task count)."""
    n = 4_000
    _produce(tmp_path / "log", 0, n)
    _start(daemons, tmp_path, rate=300)
    daemons.cli("submit", str(_editable.write_dsl(tmp_path / "code", 1)), "--containers", "2")
    wait_for(lambda: committed_rows(tmp_path / "out" / "counter"), 60, "the first committed rows")
    for rev, tasks in ((1, 3), (2, 1)):
        res = _edit(
            daemons, "replace", "editable", "--parallelism", f"counter={tasks}", "--base", str(rev)
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"revision {rev + 1} applied" in res.stdout, res.stdout
    wait_for(lambda: len(committed_rows(tmp_path / "out" / "counter")) >= n, 180, "every record")
    assert _check_counter(tmp_path / "out", n) == [1]


def _post(daemons: Daemons, query: str, data: bytes = b"") -> tuple[int, Any]:
    req = urllib.request.Request(
        f"{daemons.http}/api/v1/topologies/editable/revisions?{query}",
        data=data,
        method="POST",
        headers=daemons.auth,
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_failed_replacement_rolls_back_stale_and_invalid_edits_change_nothing(
    daemons: Daemons, tmp_path: Path
) -> None:
    n = 6_000
    _produce(tmp_path / "log", 0, n)
    _start(daemons, tmp_path, rate=300)
    code = tmp_path / "code"
    daemons.cli("submit", str(_editable.write(code / "r1", 1, [])), "--containers", "2")
    wait_for(lambda: committed_rows(tmp_path / "out" / "counter"), 60, "the first committed rows")

    # a replacement that raises in open(): rolled back, the error names component and cause
    res = _edit(
        daemons,
        "replace",
        "editable",
        str(_editable.write(code / "bad", 2, [], True)),
        "--base",
        "1",
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "rolled back" in res.stdout
    assert "counter" in res.stdout and "no model file" in res.stdout
    view = daemons.api("/api/v1/topologies/editable/revisions")
    assert view["current"] == 1
    assert [r["status"] for r in view["revisions"]] == ["applied", "rolled_back"]

    # stale: made against revision 1 after revision 3 applied -> 409 with the current one
    res = _edit(
        daemons, "attach", "editable", str(_editable.write(code / "t", 1, [1])), "--base", "1"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    data, entry = build_package(_editable.write(code / "t2", 1, [2]))
    status, body = _post(daemons, f"action=attach&base=1&entry={entry}", data)
    assert status == 409 and body["current"] == 3, body
    # invalid: a tap reading a stream nobody declares; an attach that also changes code
    bad = _editable.write(code / "cycle", 1, [1, 2])
    bad.write_text(
        bad.read_text().replace('"tap_2", Tap, inputs={"log"', '"tap_2", Tap, inputs={"nowhere"')
    )
    data, entry = build_package(bad)
    status, body = _post(daemons, f"action=attach&base=3&entry={entry}", data)
    assert status == 400 and "nowhere" in body["error"], body
    data, entry = build_package(_editable.write(code / "sneaky", 5, [1, 2]))
    status, body = _post(daemons, f"action=attach&base=3&entry={entry}", data)
    assert status == 400 and "counter" in body["error"], body
    status, body = _post(daemons, "action=remove&base=3&components=counter")
    assert status == 400, body
    view = daemons.api("/api/v1/topologies/editable/revisions")
    assert view["current"] == 3 and len(view["revisions"]) == 3

    # rollback: to a revision that was applied (not to the one that failed), live
    res = _edit(daemons, "rollback", "editable", "2", "--base", "3")
    assert res.returncode == 2 and "was never applied" in res.stderr, res.stderr
    res = _edit(daemons, "rollback", "editable", "1", "--base", "3", "--author", "ops")
    assert res.returncode == 0 and "revision 4 applied" in res.stdout, res.stdout + res.stderr
    last = daemons.api("/api/v1/topologies/editable/revisions")["revisions"][-1]
    assert (last["action"], last["author"], last["diff"]["removed"]) == (
        "rollback",
        "ops",
        ["tap_1", "tap_1_sink"],
    )
    assert (
        last["hash"] == daemons.api("/api/v1/topologies/editable/revisions")["revisions"][0]["hash"]
    )
    assert "rollback" in daemons.cli("revisions", "editable")

    wait_for(lambda: len(committed_rows(tmp_path / "out" / "counter")) >= n, 120, "every record")
    assert _check_counter(tmp_path / "out", n) == [1]  # the failed version handled nothing
    taps = sorted(r[1] for r in committed_rows(tmp_path / "out" / "tap_1"))
    assert taps and taps == list(range(taps[0], taps[-1] + 1))  # attached, then rolled away


def test_twenty_random_edits_across_edge_and_cloud_with_an_agent_offline(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    """22 edits in random order: replace the edge counter (its counts carry over), attach and
    remove probes on the edge and taps in the cloud; site1's agent is cut off for 8 of them
    and takes the newest revision when it is back. Every reading once, by one version. Site0's
    agent runs the smallest footprint (``--footprint single``), site1's the normal one."""
    daemons.start_master()
    proxy = LinkProxy(daemons.grpc)  # site1 reaches the master through it
    status = {s: free_port() for s in SITES}
    publisher: SteadySensors | None = None
    n = 3000  # readings per site
    sensors = Sensors(*mosquitto)
    try:
        out = tmp_path / "out"
        daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
        for site in SITES:
            master = proxy.address if site == "site1" else daemons.grpc
            route = ["--ingress-proxy", proxy.address] if site == "site1" else []
            # site0's edge subgraph inside its agent's process, its tasks on threads
            route += ["--footprint", "single"] if site == "site0" else []
            daemons.start_agent(
                f"gw-{site}",
                *_agent_args(mosquitto, site, master, "--status-port", str(status[site]), *route),
            )
        wait_for(
            lambda: len([x for x in daemons.api("/api/v1/nodes") if x["online"]]) == 3,
            30,
            "the worker and both agents online",
        )
        code = tmp_path / "code"
        daemons.cli("submit", str(_editable_edge.write(code / "r1", 1)))
        messages = [
            (f"sensors/{site}/s{i % 3}", json.dumps({"seq": i}).encode())
            for i in range(n)
            for site in SITES
        ]
        publisher = SteadySensors(sensors, messages, 120)
        publisher.start()
        wait_for(lambda: committed_rows(out / "counts"), 60, "the first rows in the cloud")

        def revision(site: str) -> int:
            return int(_status(status[site]).get("revisions", {}).get("edgeedit", 0))

        rng = random.Random(66)
        version, k = 1, 0
        probes: list[int] = []
        taps: list[int] = []
        kinds = ["replace", "attach_probe", "remove_probe", "attach_tap", "remove_tap"]
        for i in range(22):
            if i == 7:
                proxy.cut()
                wait_for(lambda: not _node(daemons, "gw-site1")["online"], 20, "site1 offline")
                cut_at = _current_edge(daemons)
            if i == 15:
                if _last_edge(daemons) > cut_at:  # an edge edit while it was away: it is behind
                    assert revision("site1") < _last_edge(daemons)
                proxy.restore()
            kind = rng.choice(
                [
                    x
                    for x in kinds
                    if not (x == "remove_probe" and not probes)
                    and not (x == "remove_tap" and not taps)
                ]
            )
            args: list[str] = []
            if kind == "replace":
                version += 1
                args = ["replace", "edgeedit", "--components", "count"]
            elif kind.startswith("attach"):
                k += 1
                (probes if kind == "attach_probe" else taps).append(k)
                args = ["attach", "edgeedit"]
            else:
                pool = probes if kind == "remove_probe" else taps
                gone = rng.choice(pool)
                pool.remove(gone)
                name = f"{'probe' if pool is probes else 'tap'}_{gone}"
                args = ["remove", "edgeedit", name, f"{name}_sink"]
            f = _editable_edge.write(code / f"e{i}", version, probes, taps)
            if kind.startswith("remove"):
                args += ["--file", str(f)]
            else:
                args.insert(2, str(f))
            res = _edit(daemons, *args, "--base", str(_current_edge(daemons)))
            assert res.returncode == 0, f"edit {i} ({kind}): {res.stdout}{res.stderr}"
            assert "applied" in res.stdout, res.stdout
        edge_rev = _last_edge(daemons)
        wait_for(
            lambda: (
                daemons.api("/api/v1/topologies/edgeedit/revisions")["agents"]
                == {"gw-site0": edge_rev, "gw-site1": edge_rev}
            ),
            60,
            "both agents at the newest edge revision",
        )
        history = daemons.api("/api/v1/topologies/edgeedit/revisions")["revisions"]
        assert [r["status"] for r in history] == ["applied"] * 23
        assert "edge subgraph at revision" in daemons.cli("revisions", "edgeedit")

        publisher.join(90)
        assert not publisher.is_alive() and publisher.sent == {s: n for s in SITES}
        # readings after the last edit (the edits may outlast the steady ones on a loaded
        # machine): the newest version handles them on both sites
        tail = 30
        after = SteadySensors(
            sensors,
            [
                (f"sensors/{site}/s{i % 3}", json.dumps({"seq": i}).encode())
                for i in range(n, n + tail)
                for site in SITES
            ],
            120,
        )
        after.run()
        assert after.sent == {s: tail for s in SITES}
        wait_for(
            lambda: len(committed_rows(out / "counts")) >= 2 * (n + tail),
            120,
            "every reading in the cloud",
        )
        rows = committed_rows(out / "counts")
        for site in SITES:
            mine = sorted((r for r in rows if r[0].split("/")[1] == site), key=lambda r: r[1])
            assert [r[1] for r in mine] == list(range(n + tail)), f"{site}: gaps or duplicates"
            for topic in {r[0] for r in mine}:
                counts = [r[2] for r in mine if r[0] == topic]
                assert counts == list(range(1, len(counts) + 1)), f"{topic}: count broke"
            versions = [r[3] for r in mine]
            assert versions == sorted(versions) and versions[-1] == version, site
            for probe in range(1, k + 1):
                seqs = sorted(
                    r[1] for r in committed_rows(tmp_path / f"gw-{site}" / f"ingest-probe_{probe}")
                )
                assert seqs == list(range(seqs[0], seqs[-1] + 1)) if seqs else True, probe
        for tap in range(1, k + 1):
            tap_rows = committed_rows(out / f"tap_{tap}")
            for site in SITES:
                seqs = sorted(r[1] for r in tap_rows if r[0].split("/")[1] == site)
                assert seqs == list(range(seqs[0], seqs[-1] + 1)) if seqs else True, tap
    finally:
        if publisher is not None:
            publisher.stop.set()
            publisher.join(30)
        sensors.close()
        proxy.close()


def _last_edge(daemons: Daemons) -> int:
    """The newest revision that changed edge components (what the agents run)."""
    history = daemons.api("/api/v1/topologies/edgeedit/revisions")["revisions"]
    edge = [
        int(r["revision"])
        for r in history
        if any(x.startswith(("probe", "count")) for v in r["diff"].values() for x in v)
    ]
    return max(edge, default=1)


def _current_edge(daemons: Daemons) -> int:
    return int(daemons.api("/api/v1/topologies/edgeedit/revisions")["current"])
