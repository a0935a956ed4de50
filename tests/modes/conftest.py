"""The ``run_in`` fixture: one behaviour test, run in every execution mode.

As Bytewax's test suite runs each test under each of its execution modes, a test here
takes ``run_in`` and is run three times: ``[kit]`` (the in-process test kit,
``headwater.testing.run_main``), ``[cluster]`` (a `headwater run` cluster of real
processes, ``LocalCluster``) and ``[agent]`` (a master, a worker and an edge agent daemon:
everything but the sinks runs in the agent's edge subgraph, the sinks in the cloud).

A test module declares its cases at module level, ``NAME = Case(file, inputs, rows=N,
**settings)`` (``file``: a topology file of ``topologies/`` defining ``build(case)``);
``run_in(case)`` returns what each of the case's sinks received, ``{sink: [values,
...]}``, waiting for ``rows`` rows in all where processes run. The first call of a
module runs all its cases at once, one topology for each reliability mode among them
(one cluster, one submission to the agent), and keeps every case's result: the agent's
daemons and each cluster are shared by the module's tests, so a module carries
``tests/_workers.py``'s ``one_worker`` mark (its tests on one xdist worker: one run each).
"""

from __future__ import annotations

import itertools
import json
import runpy
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from headwater.cloud.local import LocalCluster
from headwater.common.api import RuntimeConfig
from headwater.common.plan import load_topology
from headwater.testing import run_main

from .._wait import wait_for
from ..conftest import show_on_failure
from ..integration._daemons import Daemons

TOPOLOGIES = Path(__file__).parent / "topologies"
# the modes that start real processes carry the integration tests' mark
MODES = [
    "kit",
    pytest.param("cluster", marks=pytest.mark.cluster),
    pytest.param("agent", marks=pytest.mark.cluster),
]
SEP = "_case"  # as topologies/_modes.py's
_RUNS = itertools.count(1)
Outputs = dict[str, list[Any]]
Runner = Callable[[Path, int], None]


@dataclass(eq=False)
class Case:
    """A topology file of ``topologies/``, its inputs and settings, and the rows its sinks
    receive in all (where processes run, the run waits for them)."""

    file: str
    inputs: Any
    rows: int
    settings: dict[str, Any] = field(default_factory=dict)


def case(file: str, inputs: Any, *, rows: int, **settings: Any) -> Case:
    return Case(file, inputs, rows, settings)


def _config_key(c: Case) -> str:
    """What must be the same for cases to share a topology: its reliability mode, its dead
    letters (the rest of a case's config travels with its components)."""
    sys.path.insert(0, str(TOPOLOGIES))
    try:
        spec = {"inputs": c.inputs, "out": "", "suffix": "", **c.settings}
        topology = runpy.run_path(str(TOPOLOGIES / c.file))["build"](spec)
    finally:
        sys.path.remove(str(TOPOLOGIES))
    reliability = RuntimeConfig.from_mapping(topology.config).reliability
    return repr((reliability, topology.dead_letters))


def _prepare(tmp: Path, mode: str, cases: list[Case]) -> tuple[Path, dict[Case, Path]]:
    """A folder of its own holding the files, their helpers, ``mode_settings.py`` and the
    entry ``main.py``; the topology's name is new for each run (the agent's master keeps
    earlier ones' names a while). Returns the entry and each case's output folder."""
    run = tmp / f"run-{next(_RUNS)}"
    run.mkdir(parents=True)
    shutil.copy(TOPOLOGIES / "_modes.py", run / "_modes.py")
    outs: dict[Case, Path] = {}
    specs = []
    for n, c in enumerate(cases):
        shutil.copy(TOPOLOGIES / c.file, run / c.file)
        outs[c] = run / f"out{n}"
        outs[c].mkdir()
        specs.append(
            {"file": c.file, "inputs": c.inputs, "out": str(outs[c]), "suffix": f"{SEP}{n}"}
            | c.settings
        )
    settings = {"mode": mode, "name": f"modes-{run.name}", "cases": specs}
    (run / "mode_settings.py").write_text(
        f"import json\n\nSETTINGS = json.loads({json.dumps(settings)!r})\n"
    )
    (run / "main.py").write_text("from _modes import main\n\ntopology = main(__file__)\n")
    return run / "main.py", outs


def _outputs(out: Path) -> Outputs:
    rows: Outputs = {}
    for f in sorted(out.glob("*.jsonl")):
        sink = f.stem.rsplit("-", 1)[0].rsplit(SEP, 1)[0]
        rows.setdefault(sink, []).extend(json.loads(line) for line in f.read_text().splitlines())
    return rows


def _count(folders: list[Path]) -> int:
    return sum(len(v) for out in folders for v in _outputs(out).values())


def _until(folders: list[Path], rows: int) -> None:
    wait_for(lambda: _count(folders) >= rows, 90, f"{rows} rows at the sinks")


def _kit(main: Path, rows: int) -> None:
    run_main(load_topology(main))


def _cluster(main: Path, rows: int) -> None:
    cluster = LocalCluster(main, containers=1)
    cluster.start()
    try:
        cluster.wait_running(timeout=90)
        _until(list(main.parent.glob("out*")), rows)
    finally:
        cluster.stop()


def _on_agent(daemons: Daemons) -> Runner:
    def run(main: Path, rows: int) -> None:
        name = runpy.run_path(str(main.parent / "mode_settings.py"))["SETTINGS"]["name"]
        daemons.cli("submit", str(main))
        try:
            _until(list(main.parent.glob("out*")), rows)
        finally:
            daemons.cli("kill", name)

    return run


def _agent_daemons(tmp: Path) -> Daemons:
    daemons = Daemons(tmp)
    daemons.start_master()
    daemons.start_worker("w1")
    daemons.start_agent("gw", "--master", daemons.grpc, "--footprint", "small")
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2,
        30,
        "the worker and the agent online",
    )
    return daemons


@pytest.fixture(scope="module", params=MODES)
def _mode(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Runner]]:
    """The mode and its runner; the agent's daemons once for a module's tests."""
    mode = str(request.param)
    if mode == "kit":
        yield mode, _kit
    elif mode == "cluster":
        yield mode, _cluster
    else:
        daemons = _agent_daemons(tmp_path_factory.mktemp("agent"))
        show_on_failure(request.node, "daemon logs", daemons.logs)
        try:
            yield mode, _on_agent(daemons)
        finally:
            daemons.stop()


class RunIn:
    """``run_in(case)``: the case's sink rows, from a run of all the module's cases."""

    def __init__(self, mode: str, runner: Runner, tmp: Path, cases: list[Case]) -> None:
        self.mode, self.runner, self.tmp, self.cases = mode, runner, tmp, cases
        self.results: dict[Case, Outputs | BaseException] = {}

    def __call__(self, c: Case) -> Outputs:
        if c not in self.results:
            batch = self.cases if c in self.cases else [c]
            groups: dict[str, list[Case]] = {}
            for one in batch:
                if one not in self.results:
                    groups.setdefault(_config_key(one), []).append(one)
            for group in groups.values():
                self._run(group)
        result = self.results[c]
        if isinstance(result, BaseException):
            raise result
        return result

    def _run(self, group: list[Case]) -> None:
        main, outs = _prepare(self.tmp, self.mode, group)
        try:
            self.runner(main, sum(c.rows for c in group))
        except Exception as e:  # every case of the group fails with it
            self.results.update(dict.fromkeys(group, e))
        else:
            self.results.update({c: _outputs(outs[c]) for c in group})


@pytest.fixture(scope="module")
def run_in(
    request: pytest.FixtureRequest,
    _mode: tuple[str, Runner],
    tmp_path_factory: pytest.TempPathFactory,
) -> RunIn:
    """Runs a ``Case`` in this test's mode; returns its sinks' rows (see the module)."""
    cases = [v for v in vars(request.module).values() if isinstance(v, Case)]
    return RunIn(*_mode, tmp_path_factory.mktemp("modes"), cases)
