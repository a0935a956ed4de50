"""The DAG shows what moves (issue 36), in a real headless Chromium.

A master and a worker run ``topologies/backpressure.py`` (fast -> slow, congested; steady ->
steady_sink, paced): ``fast``'s box is drawn in the backpressure colour (its class, the
computed stroke of its frame), edges are as wide as the records/s they carry, the whole DAG
fits a 1280x800 window, a zoom stays across the once-a-second redraws, ``fast``'s task is
marked backpressured in its per-task table, and at a tablet's 820 px the page does not
scroll sideways.

Then the console's own modules on synthetic snapshots (no cluster behind them): a component
whose one task carries 80% of the load is marked skewed in its task table; a component
whose errors grow is failing, one with no records idle; the topologies table, the DAG's
boxes and each component's detail count the same errors (edge dead letters and crashes,
cloud crashes, dead letters and failed tuples) as ``_snapshot.errors`` (the REST summary);
and a tall DAG (three agents' lanes and the cloud's) fits the window.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

import pytest
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from headwater.common.console._snapshot import errors

from ..integration._daemons import Daemons
from ..integration._support import TOPOLOGIES, wait_for
from ._page import Page
from ._synthetic import snapshots
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

FAST = 'g.component[data-component="fast"]'
BP_COLOUR = "rgb(216, 67, 21)"  # console.css --bp

# every box and band's rectangle inside the window (fit: the whole DAG on screen)
_OUTSIDE = """
const [w, h] = [window.innerWidth, window.innerHeight];
return [...document.querySelectorAll('svg.dag g.component, svg.dag g.band')].filter((g) => {
  const r = g.getBoundingClientRect();
  return r.left < 0 || r.top < 0 || r.right > w + 0.5 || r.bottom > h + 0.5 || !r.width;
}).map((g) => g.dataset.component || g.dataset.lane);
"""
_VIEWBOX = "const s = document.querySelector('svg.dag'); return s && s.getAttribute('viewBox');"


def _edges(page: Page) -> list[tuple[float, float]]:
    """(records/s, stroke width) of each edge drawn."""
    pairs = page.js(
        "return [...document.querySelectorAll('path.edge')].map("
        "(p) => [p.dataset.flow, p.getAttribute('stroke-width')]);"
    )
    return [(float(f or -1), float(w)) for f, w in pairs]


def _redrawn(page: Page) -> None:
    """Wait for the next redraw: the page replaces the <svg> with each snapshot."""
    page.js("document.querySelector('svg.dag').dataset.old = '1';")
    wait_for(lambda: page.count("svg.dag[data-old]") == 0, 15, "a redraw")


def test_the_dag_draws_backpressure_flow_and_zooms(
    daemons: Daemons, browser: webdriver.Chrome
) -> None:
    daemons.start_master()
    daemons.start_worker("w1")
    wait_for(lambda: [n["online"] for n in daemons.api("/api/v1/nodes")] == [True], 30, "w1")
    daemons.cli("submit", str(TOPOLOGIES / "backpressure.py"))
    browser.set_window_size(1280, 800)
    page = Page(browser, daemons.http, SCREENSHOTS)
    page.open()
    page.login(daemons.token)
    page.go("#/topology/backpressure")

    # the spout the slow bolt holds back: its box in the backpressure colour, hatched, badged
    page.find(f"{FAST}.bp-high", 90)
    stroke = page.js(
        "return getComputedStyle(document.querySelector(arguments[0])).stroke;", f"{FAST} .frame"
    )
    assert stroke == BP_COLOUR
    assert "bp" in page.text(f"{FAST} .badge")
    assert page.count('g.component[data-component="steady"].backpressured') == 0

    # edges as wide as what they carry: two paths, ~10k/s and ~1k/s (whatever this machine
    # makes of them), their widths in the same order as their flows
    def measured() -> list[tuple[float, float]] | None:
        edges = _edges(page)
        flows = sorted(f for f, _ in edges)
        return edges if len(edges) == 2 and flows[0] > 0 and flows[1] > 1.2 * flows[0] else None

    (f1, w1), (f2, w2) = wait_for(measured, 60, "two edges with different flows")
    assert (f1 - f2) * (w1 - w2) > 0, (f1, w1, f2, w2)

    # fit: the whole DAG in the window; then a zoom the redraws keep, until fit again
    assert page.js(_OUTSIDE) == []
    fitted = page.js(_VIEWBOX)
    page.click("#zoom-in")
    zoomed = page.js(_VIEWBOX)
    assert zoomed != fitted and page.find("#dag").get_attribute("data-zoom") == "manual"
    _redrawn(page)
    assert page.js(_VIEWBOX) == zoomed
    page.find("#dag").send_keys("-")  # the keys, with the DAG focused
    page.find("#dag").send_keys(Keys.ARROW_RIGHT)
    assert page.js(_VIEWBOX) not in (zoomed, fitted)
    page.find("#dag").send_keys("0")
    assert page.js(_VIEWBOX) == fitted and page.js(_OUTSIDE) == []

    # fast's one task: marked backpressured in its task table
    page.click(FAST)
    page.find("#instances tr.backpressured td.bp-high", 30)
    assert page.count("#instances tbody tr") == 1
    page.shot("topology-flow")

    # a tablet: no sideways scroll of the page, the DAG still whole
    browser.set_window_size(820, 1180)
    _redrawn(page)
    wide = page.js("return [document.documentElement.scrollWidth, window.innerWidth];")
    assert wide[0] <= wide[1], wide
    assert page.js(_OUTSIDE) == []


# the console's modules on given snapshots: the topologies table and the topology view,
# mounted side by side; window.feed(snap) feeds one more
_MOUNT = """
const [texts, done] = [arguments[0], arguments[arguments.length - 1]];
Promise.all([import('/console/views.js'), import('/console/main.js')]).then(([views, main]) => {
  const list = document.createElement('div');
  const root = document.createElement('main');
  document.body.replaceChildren(list, root);
  const kept = [];
  let view = null;
  // a viewer's page: no edit, control or admin panels (none of them is this test's)
  const ctx = { canEdit: false, canOperate: false, canAdmin: false, redraw() {
    const last = kept[kept.length - 1];
    view.update(last, main.rates(kept[0], last));
  } };
  const table = views.topologies(list, ctx);
  window.feed = (snap) => {
    kept.push(snap);
    if (view === null) view = views.topology(root, ctx, snap.topology.name);
    table.update(snap, main.rates(kept[0], snap));
    ctx.redraw();
  };
  texts.forEach((t) => window.feed(JSON.parse(t)));
  done(true);
}).catch((err) => done(String(err)));
"""


def _components() -> list[dict[str, Any]]:
    def comp(name: str, kind: str, n: int, side: str, inputs: list[str]) -> dict[str, Any]:
        return {
            "name": name,
            "kind": kind,
            "parallelism": n,
            "side": side,
            "selector": {},
            "inputs": inputs,
        }

    return [
        comp("readings", "spout", 1, "edge", []),
        comp("parse", "bolt", 1, "edge", ["readings"]),
        comp("check", "bolt", 3, "cloud", ["parse"]),
        comp("sink", "bolt", 1, "cloud", ["check"]),
        comp("audit", "bolt", 1, "cloud", ["check"]),
    ]


def _snapshot(k: int) -> dict[str, Any]:
    """The k-th snapshot (3 s apart) of a small topology: ``check``'s task 1 takes 80% of its
    input (one hot key), its output blocked 90% of the time; ``sink`` crashes once more in
    each; ``audit`` gets nothing; ``parse`` dead-letters on two agents."""
    comps = _components()
    s = 3.0 * k
    task = {
        "1": ("check", 240 * s, 0.9, {"exceptions": 2.0, "dead_letters": 6.0, "failed": 3.0}),
        "2": ("check", 30 * s, 0.9, {}),
        "3": ("check", 30 * s, 0.9, {}),
        "4": ("sink", 300 * s, 0.0, {"exceptions": float(k)}),
        "5": ("audit", 0.0, 0.0, {}),
    }
    tasks: dict[str, dict[str, Any]] = {
        t: {
            "component": c,
            "container": 1,
            "executed": n,
            "emitted": n,
            "backpressure_ms": 1000 * bp * s,
            "pending": 0.0,
            "execute_latency_us": 200.0,
            "busy_ns": 0.0,
            **errs,
        }
        for t, (c, n, bp, errs) in task.items()
    }
    metrics: dict[str, dict[str, float]] = {}
    for m in tasks.values():
        agg = metrics.setdefault(m["component"], {"tasks": 0})
        agg["tasks"] += 1
        for key in (
            "executed",
            "emitted",
            "backpressure_ms",
            "exceptions",
            "dead_letters",
            "failed",
        ):
            agg[key] = agg.get(key, 0.0) + m.get(key, 0.0)
    agents = {
        a: {
            "online": True,
            "uplink": {"connected": 1.0},
            "backlog_bytes": 0,
            "components": {
                "readings": {"executed": 0.0, "emitted": 200 * s},
                "parse": {"executed": 200 * s, "emitted": 150 * s, **errs},
            },
        }
        for a, errs in (
            ("gw-a", {"dead_letters": 20.0}),
            ("gw-b", {"dead_letters": 5.0, "exceptions": 1.0}),
        )
    }
    whole = SimpleNamespace(
        components=[
            SimpleNamespace(name=c["name"], placement=SimpleNamespace(is_edge=c["side"] == "edge"))
            for c in comps
        ]
    )
    totals = errors(cast(Any, None), cast(Any, whole), agents, {"components": metrics})
    detail = {
        "name": "synth",
        "state": "RUNNING",
        "reliability": "AT_LEAST_ONCE",
        "revision": 1,
        "components": comps,
        "metrics": metrics,
        "tasks": tasks,
        "status": {"health": "ok", "reasons": []},
        "containers": [],
        "agents": agents,
        "exceptions": [],
    }
    row = {
        "name": "synth",
        "state": "RUNNING",
        "revision": 1,
        "uptime_s": s,
        "status": {"health": "ok"},
        "reliability": "AT_LEAST_ONCE",
        "executed": 0.0,
        **totals,
    }
    return {"time": 1000.0 + s, "topologies": [row], "nodes": [], "models": [], "topology": detail}


def _mount(browser: webdriver.Chrome, base: str, snaps: list[str]) -> None:
    browser.get(base + "/")
    browser.set_script_timeout(60)
    assert browser.execute_async_script(_MOUNT, snaps) is True


def test_task_skew_failing_idle_and_errors_counted_the_same(
    daemons: Daemons, browser: webdriver.Chrome
) -> None:
    daemons.start_master()  # serves the page's modules; the snapshots are made here
    browser.set_window_size(1280, 800)
    page = Page(browser, daemons.http, SCREENSHOTS)
    snaps = [_snapshot(k) for k in range(3)]
    _mount(browser, daemons.http, [json.dumps(s) for s in snaps])

    # states: check backpressured, sink failing (its crashes grew), audit idle
    states = page.js(
        "return Object.fromEntries([...document.querySelectorAll('g.component')].map("
        "(g) => [g.dataset.component + '@' + g.dataset.agent, g.dataset.state]));"
    )
    assert states["check@"] == "backpressure" and page.count("g.bp-high") == 1
    assert states["sink@"] == "failing" and page.count("g.failing") == 1
    assert states["audit@"] == "idle" and page.count("g.idle") == 1

    # errors: the table's (the REST summary's sums) = the boxes' = the details'
    total = snaps[-1]["topologies"][0]["errors"]
    assert total == 20 + 5 + 1 + 2 + 6 + 3 + 2
    cell = page.find('tr[data-topology="synth"] td.errors')
    assert int(cell.get_attribute("data-errors") or -1) == total
    boxes: list[list[Any]] = page.js(
        "return [...document.querySelectorAll('g.component')].map("
        "(g) => [g.dataset.component, Number(g.dataset.errors)]);"
    )
    assert sum(n for _, n in boxes) == total
    for name in ("parse", "check", "sink"):
        page.click(f'g.component[data-component="{name}"]')
        page.wait_text("#component-detail h2", name)
        shown = int(page.find(".errors-total").get_attribute("data-errors") or -1)
        assert shown == sum(n for c, n in boxes if c == name), name

    # check's task table: every task, the hot one marked skewed, all three backpressured
    page.click('g.component[data-component="check"]')
    page.wait_text("#component-detail h2", "check")
    rows = page.js(
        "return [...document.querySelectorAll('#instances tbody tr')].map("
        "(r) => [r.dataset.task, r.className, r.querySelector('td.share').textContent]);"
    )
    assert [r[0] for r in rows] == ["1", "2", "3"]
    assert ["skewed" in r[1] for r in rows] == [True, False, False]
    assert rows[0][2].startswith("▲ 80 %")
    assert all("backpressured" in r[1] for r in rows)

    # a tall DAG (three agents' lanes, the cloud's 2 layers of 20) fits the window
    _mount(browser, daemons.http, snapshots(40, 3, 2))
    lanes = page.js("return [...document.querySelectorAll('g.band')].map((b) => b.dataset.lane);")
    assert lanes == ["gw-00", "gw-01", "gw-02", "cloud"]
    assert page.js(_OUTSIDE) == []

    # a drag pans (and opens nothing); the next snapshot's drawing keeps the view
    fitted = page.js(_VIEWBOX)
    ActionChains(browser).drag_and_drop_by_offset(page.find("#dag"), -120, -60).perform()
    panned = page.js(_VIEWBOX)
    x0, y0, *size0 = (float(n) for n in fitted.split())
    x1, y1, *size1 = (float(n) for n in panned.split())
    assert x1 > x0 and y1 > y0 and size1 == size0
    assert page.text("#component-detail") == ""
    page.js("window.feed(JSON.parse(arguments[0]));", snapshots(40, 3, 3)[-1])
    assert page.js(_VIEWBOX) == panned
