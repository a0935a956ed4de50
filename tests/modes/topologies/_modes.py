"""What the mode tests' topology files share: their settings, a sink, and edge placement.

Each topology file defines ``build(case) -> Topology``; ``case`` holds ``inputs``, ``out``
(the folder its sinks write to), ``suffix`` (to end each component's name with) and the
test's own settings. A run writes ``main.py`` and ``mode_settings.py`` (a package carries
Python files) beside copies of the files: ``mode`` (kit, cluster or agent), ``name`` (the
topology's, new for each run) and ``cases``. Every component whose name starts with
``sink`` is a sink (``main`` makes them one); under ``agent`` every other component runs
on the edge agent.
"""

from __future__ import annotations

import json
import os
import runpy
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from headwater import Bolt, Context, Topology, Tuple, global_
from headwater.common.api import ComponentSpec, Input
from headwater.placement import edge


def settings(file: str) -> dict[str, Any]:
    """The run's settings, from ``mode_settings.py`` beside the topology ``file``."""
    return dict(runpy.run_path(str(Path(file).parent / "mode_settings.py"))["SETTINGS"])


class JsonSink(Bolt):
    """Writes each tuple's values to ``OUT/<component>-<task>.jsonl``, a line at once."""

    def __init__(self, out: str) -> None:
        self.out = out

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        path = os.path.join(self.out, f"{ctx.component}-{ctx.task_id}.jsonl")
        self.file = open(path, "a", buffering=1)  # noqa: SIM115 (closed in close())

    def process(self, tup: Tuple) -> None:
        self.file.write(json.dumps(tup.values) + "\n")
        self.ctx.ack(tup)

    def close(self) -> None:
        self.file.close()


def placed(topology: Topology, mode: str) -> Topology:
    """``topology`` as the mode runs it: under ``agent``, all but the sinks on the edge."""
    if mode != "agent":
        return topology
    return replace(
        topology,
        components=tuple(
            c if c.name.startswith("sink") else replace(c, placement=edge())
            for c in topology.components
        ),
    )


SEP = "_case"
"""A case's component names end in ``SEP`` and its number: one topology runs many cases."""


def main(file: str) -> Topology:
    """The topology ``mode_settings.py`` beside ``file`` asks for: each case's ``build``
    (of its own file, with its settings) in one topology, placed for the mode. Each
    component keeps its own topology's config as its component config; the merged
    topology's config is what they all agree on."""
    s = settings(file)
    here = Path(file).parent
    parts = [runpy.run_path(str(here / c["file"]))["build"](c) for c in s["cases"]]
    components: list[ComponentSpec] = []
    routes: dict[str, tuple[str, str]] = {}
    inputs: list[Input] = []
    for case, part in zip(s["cases"], parts, strict=True):
        for c in part.components:
            if not c.name.startswith("sink"):  # with its topology's config, as it ran alone
                components.append(replace(c, config={**part.config, **c.config}))
                continue
            for i in c.inputs:  # the case's sink becomes a route of the one sink
                routes[f"{i.component}/{i.stream}"] = (case["out"], c.name.rsplit(SEP, 1)[0])
                inputs.append(Input(i.component, i.stream, global_()))
    sink = ComponentSpec("sink", "bolt", partial(RoutingSink, routes), 1, tuple(inputs))
    common = {  # the cases share a reliability mode (the test's side sees to it)
        k: v
        for k, v in parts[0].config.items()
        if all(k in p.config and p.config[k] == v for p in parts)
    }
    merged = replace(parts[0], name=s["name"], components=(*components, sink), config=common)
    return placed(merged, s["mode"])


class RoutingSink(Bolt):
    """The sinks of many cases in one component (a process fewer for each): a tuple from
    ``component/stream`` goes where ``routes`` says, ``OUT/<sink>-<task>.jsonl``."""

    def __init__(self, routes: dict[str, tuple[str, str]]) -> None:
        self.routes = routes
        self.files: dict[str, TextIO] = {}

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        out, sink = self.routes[f"{tup.component}/{tup.stream}"]
        path = os.path.join(out, f"{sink}-{self.ctx.task_id}.jsonl")
        if path not in self.files:
            self.files[path] = open(path, "a", buffering=1)  # noqa: SIM115 (closed in close())
        self.files[path].write(json.dumps(tup.values) + "\n")
        self.ctx.ack(tup)

    def close(self) -> None:
        for f in self.files.values():
            f.close()
