"""The console's history on the big topology: the master's cost per tick and per request, its
memory over the full window, and the page's cost to draw a component's charts.

Used by ``bench/console.py`` (``python -m bench console``) on its real ``Master`` holding
the synthetic topology (``--components`` components, a fifth on the edge, on ``--agents``
agents): every tick every task's container heartbeats and every agent reports anew (a
new status message, counters advanced), the worst case, in which every component and
every task gets a sample. The master's figures, in CPU time (``time.process_time``: the
machine is shared, and its load stretches wall time, not CPU time):

- ``tick``: ``History.tick`` (read every task's metrics and every agent's status, turn
  counters into increments, append to the rings), median and max over ``TIMED_TICKS``
  ticks once the rings are full and wrapping;
- ``memory``: what ``tracemalloc`` sees the history hold once its rings are full (the
  15-minute window: ``capacity`` ticks), and the rings' own bytes;
- ``request``: building and encoding ``GET .../history`` as the page asks it (one
  component with its tasks, the full 15 minutes) and for the whole topology with tasks.

The page's figure (``draw_ms``): parsing that answer and drawing the component's charts
(``charts.js`` ``chartNodes``: 7 SVG charts of up to 150 points) with the layout forced,
as the panel does every 2 s.
"""

from __future__ import annotations

import json
import statistics
import time
import tracemalloc
from typing import Any

from selenium import webdriver

from headwater.cloud.console._edge_sources import EdgeSources
from headwater.cloud.master._master import Master
from headwater.common._clock import ManualClock
from headwater.common.console._history import TICK_S, History
from headwater.common.console._history_query import series_view
from headwater.common.wire.proto import runtime_pb2 as pb

TIMED_TICKS = 60
REQUESTS = 30


def _advance(master: Master, name: str, edge: list[str], n: float, clock: ManualClock) -> None:
    """A tick later, every task and every agent has reported counters of ``n``."""
    clock.advance(TICK_S)
    tm = master.tms[name]
    now = clock.monotonic()
    for inst in tm.plan.instances:
        m = tm.metrics[f"task:{inst.task_id}"]
        m["executed"] = m["emitted"] = n
        m["backpressure_ms"] = n / 100
        tm.last_heartbeat[inst.container] = now
    for agent in master.deployments[name].agents:
        status = pb.NodeStatus(health="ok")
        status.metrics[f"revision:{name}"] = 1.0
        for c in edge:
            for k in ("emitted", "executed"):
                status.metrics[f"component:{name}/{c}:{k}"] = n
            for k in ("exceptions", "dead_letters"):
                status.metrics[f"component:{name}/{c}:{k}"] = 0.0
        record = master.nodes.records[agent]
        record.status, record.last_seen = status, now


def master_costs(master: Master, name: str, edge: list[str]) -> tuple[dict[str, Any], History]:
    """The history's cost on ``master`` (its topology ``name``, edge components ``edge``),
    and the history, full."""
    clock = ManualClock()  # a tick's 2 s pass at once: the 10 s of the rates hold 5 samples
    history = History(lambda: master.tms, EdgeSources(master), clock=clock)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(history.capacity + 1):  # the window full, its oldest sample dropped once
        _advance(master, name, edge, 100.0 * i, clock)
        history.tick()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    ticks = []
    for i in range(TIMED_TICKS):
        _advance(master, name, edge, 100.0 * (history.capacity + 1 + i), clock)
        t0 = time.process_time()
        history.tick()
        ticks.append((time.process_time() - t0) * 1000)
    component = sorted(master.tms[name].plan.instances, key=lambda i: i.task_id)[-1].component
    one, whole = [], []
    text = ""
    for _ in range(REQUESTS):
        t0 = time.process_time()
        text = json.dumps(series_view(history, name, history.window_s, component, True))
        one.append((time.process_time() - t0) * 1000)
    for _ in range(5):
        t0 = time.process_time()
        whole_text = json.dumps(series_view(history, name, history.window_s, None, True))
        whole.append((time.process_time() - t0) * 1000)
    h = history.of[name]
    figures = {
        "tick_s": history.tick_s,
        "window_s": history.window_s,
        "capacity": history.capacity,
        "series": {"components": len(h.components), "tasks": len(h.tasks)},
        "tick_median_ms": round(statistics.median(ticks), 2),
        "tick_max_ms": round(max(ticks), 2),
        "rings_bytes": history.nbytes(),
        "held_bytes": held,
        "request_component_median_ms": round(statistics.median(one), 2),
        "request_component_bytes": len(text),
        "request_whole_median_ms": round(statistics.median(whole), 1),
        "request_whole_bytes": len(whole_text),
        "component": component,
        "answer": text,  # what the page draws (bench/console.py hands it to the browser)
    }
    return figures, history


_DRAW = """
const [text, component, times, done] = arguments;
import('/console/charts.js').then((charts) => {
  const root = document.createElement('main');
  document.body.replaceChildren(root);
  const costs = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const view = JSON.parse(text);
    root.replaceChildren(...charts.chartNodes(view, component, 900));
    void root.getBoundingClientRect().height;  // the layout the drawing causes
    costs.push(performance.now() - t0);
  }
  done({ costs, charts: root.querySelectorAll('svg.chart').length,
         points: root.querySelectorAll('polyline').length });
}).catch((err) => done({ error: String(err) }));
"""


def draw_costs(driver: webdriver.Chrome, page: str, text: str, component: str) -> dict[str, Any]:
    """Milliseconds to parse ``text`` (a history answer) and draw ``component``'s charts."""
    driver.get(page)
    driver.set_script_timeout(120)
    result: dict[str, Any] = driver.execute_async_script(_DRAW, text, component, 30)
    assert "error" not in result, result
    return result
