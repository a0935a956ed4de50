// Charts over time of the component clicked in the DAG: its rate in and out, latency, queue,
// backpressure and errors, and its tasks' rates and queues, over a window picked on the
// panel (1, 5 or 15 minutes). The data is the server's history
// (GET /api/v1/topologies/NAME/history: rates differentiated there from the reported
// counters), fetched every 2 s while the panel shows a component. Small SVG line charts made
// with createElementNS and textContent only (names come from user code); no library.
//
// Each chart's <svg class="chart" data-chart=KIND> carries its data in data-points: a JSON
// object {line name: [[epoch seconds, value], ...]} (what tests read), and data-mean the
// window's mean of its first line (rates only).

import { call } from "./api.js";
import { el } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const W = 380;
const H = 130;
const PAD = { left: 52, right: 8, top: 30, bottom: 20 };
export const WINDOWS = [60, 300, 900]; // seconds: the picker's choices
const REFETCH_MS = 2000; // the history samples every 2 s
const MAX_TASK_LINES = 8; // more tasks than this: the busiest ones are drawn

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return v.toFixed(a < 10 ? 1 : 0);
}

// One chart: `lines` {name: [[t, v], ...]} drawn over [from, to] seconds (epoch).
export function lineChart(kind, title, unit, lines, from, to, mean) {
  const node = svg("svg", {
    class: "chart",
    "data-chart": kind,
    viewBox: `0 0 ${W} ${H}`,
    width: W,
    height: H,
    role: "img",
  });
  node.setAttribute("data-points", JSON.stringify(lines));
  if (mean !== undefined && mean !== null) node.setAttribute("data-mean", String(mean));
  const values = Object.values(lines).flatMap((pts) => pts.map((p) => p[1]));
  const top = Math.max(1e-9, ...values) * 1.1;
  const x = (t) => PAD.left + ((t - from) / Math.max(1, to - from)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const headline = mean !== undefined && mean !== null ? ` · mean ${fmt(mean)} ${unit}` : "";
  node.appendChild(svg("text", { x: 4, y: 11, class: "chart-title" }, `${title} (${unit})${headline}`));
  node.appendChild(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "axis" }));
  node.appendChild(svg("line", { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: y(0), class: "axis" }));
  node.appendChild(svg("text", { x: PAD.left - 4, y: PAD.top + 8, class: "tick end" }, fmt(top / 1.1)));
  node.appendChild(svg("text", { x: PAD.left - 4, y: y(0), class: "tick end" }, "0"));
  const span = Math.round((to - from) / 60);
  node.appendChild(svg("text", { x: PAD.left, y: H - 4, class: "tick" }, `−${span} min`));
  node.appendChild(svg("text", { x: W - PAD.right, y: H - 4, class: "tick end" }, "now"));
  let legendX = PAD.left;
  Object.entries(lines).forEach(([name, pts], i) => {
    const line = svg("polyline", {
      class: `series s${i % 6}`,
      "data-line": name,
      points: pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
    });
    line.appendChild(svg("title", {}, name));
    node.appendChild(line);
    node.appendChild(svg("text", { x: legendX, y: 24, class: `legend s${i % 6}` }, `— ${name}`));
    legendX += 16 + 7 * name.length;
  });
  if (!values.length) node.appendChild(svg("text", { x: W / 2, y: H / 2, class: "tick middle" }, "no samples yet"));
  return node;
}

function pairs(s, field, scale = 1) {
  return s.t.map((t, i) => [t, s[field][i] * scale]);
}

function componentCharts(s, from, to) {
  const mean = s.mean || {};
  const charts = [
    lineChart("rate", "rate", "/s", { in: pairs(s, "executed"), out: pairs(s, "emitted") }, from, to, mean.executed),
    // agents report no latency: an edge component's chart would be a flat, false 0
    s.side === "edge" ? null : lineChart("latency", "latency", "ms", { latency: pairs(s, "latency_us", 1 / 1000) }, from, to),
    lineChart("queue", "queue", "tuples", { queue: pairs(s, "pending") }, from, to),
    lineChart("backpressure", "backpressure", "ms/s", { backpressure: pairs(s, "backpressure_ms") }, from, to, mean.backpressure_ms),
    lineChart(
      "errors",
      "dead letters and exceptions",
      "/s",
      { "dead letters": pairs(s, "dead_letters"), exceptions: pairs(s, "exceptions") },
      from,
      to,
      mean.dead_letters,
    ),
  ];
  return charts.filter(Boolean);
}

function taskCharts(tasks, from, to) {
  const busiest = Object.entries(tasks)
    .sort(([, a], [, b]) => ((b.mean || {}).executed || 0) - ((a.mean || {}).executed || 0))
    .slice(0, MAX_TASK_LINES)
    .sort(([a], [b]) => Number(a) - Number(b));
  if (!busiest.length) return [];
  const rate = Object.fromEntries(busiest.map(([task, s]) => [`task ${task}`, pairs(s, "executed")]));
  const queue = Object.fromEntries(busiest.map(([task, s]) => [`task ${task}`, pairs(s, "pending")]));
  const more = Object.keys(tasks).length - busiest.length;
  return [
    el("h4", {}, more > 0 ? `Per task (the ${busiest.length} busiest of ${busiest.length + more})` : "Per task"),
    el(
      "div",
      { class: "charts", id: "task-charts" },
      lineChart("task-rate", "executed by task", "/s", rate, from, to),
      lineChart("task-queue", "queue by task", "tuples", queue, from, to),
    ),
  ];
}

// The charts of `component` in a history answer `view` over its last `windowS` seconds.
export function chartNodes(view, component, windowS) {
  const s = view.components[component];
  const to = view.time;
  const from = to - windowS;
  return [
    ...(s
      ? [el("div", { class: "charts", id: "component-charts" }, ...componentCharts(s, from, to))]
      : [el("p", {}, "No samples of it yet: the history samples every 2 s.")]),
    ...taskCharts(view.tasks || {}, from, to),
  ];
}

// The panel: {node, show(component), update()}; update() on every snapshot refetches at most
// every REFETCH_MS, and only while a component is shown.
export function chartsPanel(topology) {
  const node = el("section", { class: "detail charts-panel", id: "charts", hidden: "" });
  const picker = el("span", { class: "window-picker" });
  const body = el("div", { id: "chart-body" });
  let component = null;
  let windowS = WINDOWS[1];
  let asked = 0;
  let fetchedAt = 0;
  let inFlight = false;
  for (const w of WINDOWS) {
    const b = el("button", { type: "button", "data-window": w, class: "window" }, `${w / 60} min`);
    b.addEventListener("click", () => {
      windowS = w;
      fetchedAt = 0;
      fetchNow();
    });
    picker.append(b);
  }
  const head = el("h3", {});
  node.append(head, picker, el("p", { class: "hint", id: "rate-window" }), body);

  async function fetchNow() {
    if (!component) return;
    const n = ++asked;
    inFlight = true;
    fetchedAt = performance.now();
    const path = `/api/v1/topologies/${encodeURIComponent(topology)}/history`;
    const query = `window=${windowS}&component=${encodeURIComponent(component)}&tasks=1`;
    const res = await call(`${path}?${query}`).finally(() => {
      inFlight = false;
    });
    if (n !== asked) return; // a newer request (another component or window) is on its way
    draw(res);
  }

  function draw(res) {
    for (const b of picker.children) b.classList.toggle("picked", Number(b.dataset.window) === windowS);
    node.dataset.window = String(windowS);
    node.dataset.component = component;
    if (!res.ok) {
      body.replaceChildren(el("p", { class: "error" }, (res.data && res.data.error) || `HTTP ${res.status}`));
      return;
    }
    node.dataset.time = String(res.data.time);
    body.replaceChildren(...chartNodes(res.data, component, windowS));
  }

  return {
    node,
    show(name) {
      component = name;
      node.hidden = !name;
      head.textContent = name ? `${name} over time` : "";
      body.replaceChildren();
      fetchedAt = 0;
      fetchNow();
    },
    update(rates) {
      const w = rates && rates.window_s;
      node.querySelector("#rate-window").textContent = w
        ? `The rates on the DAG and the topologies table are over the last ${w} s of this history.`
        : "";
      if (component && !inFlight && performance.now() - fetchedAt >= REFETCH_MS) fetchNow();
    },
  };
}
