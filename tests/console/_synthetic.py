"""A synthetic topology of many components and agents, and its cost in the real page.

``snapshots`` makes what ``/api/v1/events`` would send for a topology of
``components`` components (a fifth on the edge, in chains of four, on
``agents`` agents; the rest in the cloud, in layers of twenty, each reading two
of the layer before) with counters that advance each second. ``measure`` loads
the console's own modules in a browser on a master's page and times, as the
page does it on each event: parsing the JSON, computing rates, and updating the
topology view (DAG, detail, edit form) with a forced layout. Shared by
``tests/console/test_scale.py`` and ``python -m bench console``.
"""

from __future__ import annotations

import json
from typing import Any

from selenium import webdriver

WIDTH = 20  # cloud components per layer
# what user code raised, markup included: the page must show it as text, never as HTML
EXCEPTION_MESSAGE = "ValueError: <img src=x onerror=alert(1)> is not a reading"
EXCEPTION_TRACEBACK = (
    'Traceback (most recent call last):\n  File "t.py", line 3, in process\n'
    "ValueError: <script>alert(1)</script>"
)


def _components(n: int) -> list[dict[str, Any]]:
    edge_chains = max(1, n // 5 // 4)
    out: list[dict[str, Any]] = []
    for i in range(edge_chains):
        names = [f"e{i}_src", f"e{i}_a", f"e{i}_b", f"e{i}_c"]
        for k, name in enumerate(names):
            out.append(
                {
                    "name": name,
                    "kind": "spout" if k == 0 else "bolt",
                    "parallelism": 1,
                    "side": "edge",
                    "selector": {},
                    "inputs": [names[k - 1]] if k else [],
                }
            )
    cloud = n - len(out)
    for j in range(cloud):
        layer, pos = divmod(j, WIDTH)
        if layer == 0:
            inputs = [f"e{pos % edge_chains}_c"]
        else:
            inputs = sorted({f"c{layer - 1}_{pos}", f"c{layer - 1}_{(pos + 1) % WIDTH}"})
        out.append(
            {
                "name": f"c{layer}_{pos}",
                "kind": "bolt",
                "parallelism": 2,
                "side": "cloud",
                "selector": {},
                "inputs": [x for x in inputs if layer == 0 or int(x.split("_")[1]) < cloud],
            }
        )
    return out


def snapshots(components: int, agents: int, count: int) -> list[str]:
    """``count`` snapshots one second apart, as JSON text (what the stream carries)."""
    comps = _components(components)
    cloud = [c["name"] for c in comps if c["side"] == "cloud"]
    edge = [c["name"] for c in comps if c["side"] == "edge"]
    out = []
    for t in range(count):
        n = 100.0 * (t + 1)
        metrics = {
            c: {
                "emitted": n,
                "executed": n,
                "acked": 0.0,
                "failed": 0.0,
                "backpressure_ms": 50.0 * t * (i % 3),
                "exceptions": float(i % 17 == 0),
                "dead_letters": 0.0,
                "pending": float(i % 7),
                "latency_us": 120.0 + i,
                "tasks": 2,
            }
            for i, c in enumerate(cloud)
        }
        tasks = {
            str(2 * i + k): {
                "component": c,
                "container": i % 8,
                "executed": n / 2,
                "emitted": n / 2,
                "busy_ns": 2e8 * t,
            }
            for i, c in enumerate(cloud)
            for k in range(2)
        }
        nodes = {
            f"gw-{a:02d}": {
                "online": a % 10 != 0,
                "health": "ok",
                "reasons": [],
                "backlog_bytes": 1000 * a,
                "uplink": {"connected": 1.0},
                "revision": 1,
                "components": {
                    c: {"emitted": n, "executed": n, "exceptions": 0.0, "dead_letters": 0.0}
                    for c in edge
                },
            }
            for a in range(agents)
        }
        detail = {
            "name": "big",
            "state": "RUNNING",
            "reliability": "EFFECTIVELY_ONCE",
            "revision": 1,
            "components": comps,
            "metrics": metrics,
            "tasks": tasks,
            "status": {"health": "ok", "reasons": []},
            "containers": [],
            "agents": nodes,
            "checkpoints": {
                "exactly_once": True,
                "interval_s": 1.0,
                "epoch": 0,
                "latest_complete": t,
                "checkpoints": [],
            },
            "revisions": {
                "current": 1,
                "applying": None,
                "agents": {},
                "revisions": [
                    {
                        "revision": 1,
                        "action": "submit",
                        "author": "",
                        "time": 0,
                        "diff": {},
                        "status": "applied",
                        "error": "",
                    }
                ],
            },
            "exceptions": [
                {
                    "task": 0,
                    "component": cloud[0],
                    "message": EXCEPTION_MESSAGE,
                    "traceback": EXCEPTION_TRACEBACK,
                    "time_ms": 1_000_000,
                }
            ],
        }
        snap = {
            "time": 1000.0 + t,
            "topologies": [
                {
                    "name": "big",
                    "state": "RUNNING",
                    "revision": 1,
                    "uptime_s": t,
                    "status": {"health": "ok"},
                    "reliability": "EFFECTIVELY_ONCE",
                    "containers": 8,
                    "executed": n,
                    "emitted": n,
                    "errors": 0,
                }
            ],
            "nodes": [],
            "models": [],
            "topology": detail,
        }
        out.append(json.dumps(snap))
    return out


_MEASURE = """
const [texts, done] = [arguments[0], arguments[arguments.length - 1]];
Promise.all([import('/console/views.js'), import('/console/main.js')]).then(([views, main]) => {
  const root = document.createElement('main');
  root.id = 'scale';
  document.body.replaceChildren(root);
  const kept = [];
  const ctx = {
    canEdit: true,
    redraw() {
      const last = kept[kept.length - 1];
      view.update(last, main.rates(kept[0], last));
    },
  };
  const costs = [];
  let view = null;
  for (const text of texts) {
    const t0 = performance.now();
    const snap = JSON.parse(text);
    kept.push(snap);
    if (kept.length > 4) kept.shift();
    if (view === null) view = views.topology(root, ctx, snap.topology.name);
    view.update(snap, main.rates(kept[0], snap));
    void root.getBoundingClientRect().height;  // the layout the update causes
    costs.push(performance.now() - t0);
  }
  done({
    first_ms: costs[0],
    update_ms: costs.slice(1),
    boxes: root.querySelectorAll('g.component').length,
    lanes: [...root.querySelectorAll('g.band')].map((b) => b.getAttribute('data-lane')),
    uplinks: root.querySelectorAll('path.uplink').length,
    bytes: texts[texts.length - 1].length,
  });
}).catch((err) => done({ error: String(err) }));
"""


def measure(driver: webdriver.Chrome, page: str, texts: list[str]) -> dict[str, Any]:
    """Load the console at ``page`` and time the topology view on ``texts``, one by one."""
    driver.get(page)
    driver.set_script_timeout(300)
    result: dict[str, Any] = driver.execute_async_script(_MEASURE, texts)
    assert "error" not in result, result
    return result
