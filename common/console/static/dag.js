// The DAG of one topology as SVG: left to right by longest-path layers, the edge side in a
// band of its own above the cloud side, one lane per agent (or one "×N agents" lane when
// there are many), uplink edges between the sides. A component its health manager diagnoses
// is marked: a class per kind on its box (`diagnosed skew`), the kind written above the box
// and the reason as its tooltip (<title>). What moves (flow.js): a bar under each box by its
// load vs the busiest component's, each edge as wide as the records/s it carries, a box's
// state (failing, backpressure, idle) as its class, colour and badge. Built with
// createElementNS and textContent only (never markup): names come from user code.

import { boxState, flows, load, pressure, rising, width as edgeWidth } from "./flow.js";

const NS = "http://www.w3.org/2000/svg";
const BOX_W = 190;
const BOX_H = 78;
const COL_W = 250;
const ROW_H = 96;
const LANE_PAD = 30;
const LEFT = 130;
const ARROW = 13; // px, an edge's arrowhead
export const MAX_LANES = 3; // more agents than this share one lane

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

// Longest-path layer of each component: 0 for sources, 1 + the deepest input otherwise.
export function layers(components) {
  const byName = new Map(components.map((c) => [c.name, c]));
  const layer = new Map();
  const visiting = new Set();
  function depth(name) {
    if (layer.has(name)) return layer.get(name);
    if (visiting.has(name)) return 0; // a cycle cannot be submitted; do not loop on one
    visiting.add(name);
    const c = byName.get(name);
    const inputs = c ? c.inputs.filter((i) => byName.has(i)) : [];
    const d = inputs.length ? 1 + Math.max(...inputs.map(depth)) : 0;
    layer.set(name, d);
    return d;
  }
  components.forEach((c) => depth(c.name));
  return layer;
}

export function fmtRate(r) {
  if (r === undefined || r === null || Number.isNaN(r)) return "–";
  if (r >= 1000) return `${(r / 1000).toFixed(1)}k/s`;
  return `${r.toFixed(r < 10 ? 1 : 0)}/s`;
}

// `topo`: the snapshot's topology detail; `rates`: {cloud: {C: {in, out, bp}},
// edge: {AGENT: {C: {in, out}}}}; `onSelect(name)` on a click; `diagnosed`: a Map of
// component -> its health diagnosis ({kind, reason, tasks}), if any. Answers the <svg>.
export function renderDag(topo, rates, onSelect, selected, diagnosed = new Map()) {
  const layer = layers(topo.components);
  const edgeComps = topo.components.filter((c) => c.side === "edge");
  const cloudComps = topo.components.filter((c) => c.side === "cloud");
  const agents = Object.keys(topo.agents);
  const lanes = [];
  if (edgeComps.length) {
    if (agents.length && agents.length <= MAX_LANES) {
      agents.forEach((a) => lanes.push({ side: "edge", agent: a, label: a, comps: edgeComps }));
    } else {
      const label = agents.length ? `×${agents.length} agents` : "edge (no agent yet)";
      lanes.push({ side: "edge", agent: null, label, comps: edgeComps });
    }
  }
  if (cloudComps.length || !lanes.length) {
    lanes.push({ side: "cloud", agent: null, label: "cloud", comps: cloudComps });
  }

  const pos = new Map(); // `${laneIndex}:${name}` -> {x, y}
  let y = 10;
  lanes.forEach((lane, li) => {
    const perLayer = new Map();
    for (const c of lane.comps) {
      const l = layer.get(c.name);
      const row = perLayer.get(l) || 0;
      perLayer.set(l, row + 1);
      pos.set(`${li}:${c.name}`, { x: LEFT + l * COL_W, y: y + LANE_PAD + row * ROW_H });
    }
    const rows = Math.max(1, ...perLayer.values());
    lane.y = y;
    lane.h = LANE_PAD + rows * ROW_H + 6;
    y += lane.h + 10;
  });
  const maxLayer = Math.max(0, ...layer.values());
  const width = LEFT + (maxLayer + 1) * COL_W + 20;
  const root = svg("svg", {
    class: "dag",
    width,
    height: y,
    viewBox: `0 0 ${width} ${y}`,
    role: "group", // not "img": its boxes are buttons
    "aria-label": `the DAG of ${topo.name}`,
  });
  const defs = svg("defs");
  const marker = svg("marker", {
    id: "arrow",
    viewBox: "0 0 10 10",
    refX: 0, // its base at the path's end, its tip ARROW px on: not under a wide edge
    refY: 5,
    markerUnits: "userSpaceOnUse", // not scaled by an edge's width
    markerWidth: ARROW,
    markerHeight: ARROW,
    orient: "auto-start-reverse",
  });
  marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
  defs.appendChild(marker);
  // a backpressured box is hatched too: not told by its colour alone
  const hatch = svg("pattern", {
    id: "bp-hatch",
    patternUnits: "userSpaceOnUse",
    width: 8,
    height: 8,
    patternTransform: "rotate(45)",
  });
  hatch.appendChild(svg("rect", { width: 8, height: 8, class: "hatch-bg" }));
  hatch.appendChild(svg("line", { x1: 0, y1: 0, x2: 0, y2: 8, class: "hatch-line" }));
  defs.appendChild(hatch);
  root.appendChild(defs);

  lanes.forEach((lane) => {
    const band = svg("g", { class: `band band-${lane.side}`, "data-lane": lane.label });
    band.appendChild(svg("rect", { x: 2, y: lane.y, width: width - 4, height: lane.h, rx: 8 }));
    band.appendChild(svg("text", { x: 12, y: lane.y + 20, class: "band-label" }, lane.label));
    if (lane.side === "edge" && lane.agent) {
      const a = topo.agents[lane.agent];
      const state = a.online ? "online" : "offline";
      band.appendChild(
        svg("text", { x: 12, y: lane.y + 38, class: `band-state ${state}` }, state),
      );
      if (a.online && a.uplink.connected === 0) {
        band.appendChild(
          svg("text", { x: 12, y: lane.y + 56, class: "band-state offline" }, "uplink down"),
        );
      }
      if (a.backlog_bytes) {
        const text = `backlog ${Math.round(a.backlog_bytes / 1024)} KiB`;
        band.appendChild(svg("text", { x: 12, y: lane.y + 74, class: "band-label" }, text));
      }
    }
    root.appendChild(band);
  });

  const edgesLayer = svg("g", { class: "edges" });
  root.appendChild(edgesLayer);
  const boxes = svg("g", { class: "boxes" });
  root.appendChild(boxes);

  const figs = new Map(); // `${laneIndex}:${name}` -> its figures (rates, errors, lines)
  lanes.forEach((lane, li) => {
    for (const c of lane.comps) figs.set(`${li}:${c.name}`, figures(topo, c, lane, rates));
  });

  const cloudLane = lanes.findIndex((lane) => lane.side === "cloud");
  const edges = []; // {fromKey, key (the downstream's), cls, up, down (figures), name}
  lanes.forEach((lane, li) => {
    for (const c of lane.comps) {
      const key = `${li}:${c.name}`;
      const down = figs.get(key);
      const edge = (fromKey, cls, input) =>
        edges.push({ fromKey, key, cls, up: figs.get(fromKey), down, name: `${input} → ${c.name}` });
      for (const input of c.inputs) {
        if (pos.has(`${li}:${input}`)) {
          const bp =
            lane.side === "cloud"
              ? (rates.cloud[input] || {}).bp
              : (figs.get(`${li}:${input}`) || {}).bp; // the upstream's, on its agent(s)
          edge(`${li}:${input}`, pressure(bp), input);
        } else if (lane.side === "cloud") {
          // an edge input: the uplink from every edge lane
          lanes.forEach((other, oi) => {
            if (oi === cloudLane || !pos.has(`${oi}:${input}`)) return;
            const up = other.agent ? topo.agents[other.agent] : null;
            const cut = up && (!up.online || up.uplink.connected === 0);
            edge(`${oi}:${input}`, `uplink ${cut ? "uplink-down" : "uplink-up"}`, input);
          });
        }
      }
    }
  });
  const flow = flows(edges);
  const busiestEdge = Math.max(0, ...flow.filter((f) => f !== undefined));
  edges.forEach((e, i) => {
    const from = pos.get(e.fromKey);
    const to = pos.get(e.key);
    const x1 = from.x + BOX_W;
    const y1 = from.y + BOX_H / 2;
    const x2 = to.x - ARROW;
    const y2 = to.y + BOX_H / 2;
    const mid = (x1 + x2) / 2;
    const path = svg("path", {
      d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`,
      class: `edge ${e.cls}`,
      "stroke-width": edgeWidth(flow[i], busiestEdge),
      "data-flow": flow[i] === undefined ? "" : flow[i].toFixed(1),
      "marker-end": "url(#arrow)",
    });
    path.appendChild(svg("title", {}, `${e.name}: ${fmtRate(flow[i])}`));
    edgesLayer.appendChild(path);
  });

  const loads = [...figs.values()].map((f) => load(f.kind, f) || 0);
  const busiest = Math.max(0, ...loads);
  lanes.forEach((lane, li) => {
    for (const c of lane.comps) {
      const p = pos.get(`${li}:${c.name}`);
      const f = figs.get(`${li}:${c.name}`);
      const failing = rising(`${topo.name}/${lane.label}/${c.name}`, f.errors);
      const g = box(c, lane, p, f, boxState(f, failing), busiest, onSelect, selected);
      const d = diagnosed.get(c.name);
      if (d) mark(g, d);
      boxes.appendChild(g);
    }
  });
  return root;
}

// A box's figures: rates in and out (undefined before a second snapshot), backpressure
// (cloud: its tasks' output blocked, seconds per second per task), errors summed as the
// topologies table sums them (_snapshot.py `errors`), and its detail lines.
function figures(topo, c, lane, rates) {
  if (lane.side === "cloud") {
    const m = topo.metrics[c.name] || {};
    const r = rates.cloud[c.name] || {};
    const errors = (m.exceptions || 0) + (m.dead_letters || 0) + (m.failed || 0);
    const lat = m.latency_us ? `${(m.latency_us / 1000).toFixed(2)} ms` : "–";
    const lines = [`lat ${lat} · queue ${m.pending || 0}`];
    return { kind: c.kind, in: r.in, out: r.out, bp: r.bp, errors, dead: m.dead_letters || 0, lines };
  }
  const agents = lane.agent ? [lane.agent] : Object.keys(topo.agents);
  const known = agents.some((a) => rates.edge[a]); // no rate before a second snapshot
  const f = { kind: c.kind, in: known ? 0 : undefined, out: known ? 0 : undefined, errors: 0, dead: 0 };
  for (const a of agents) {
    const r = (rates.edge[a] || {})[c.name] || {};
    if (known) f.in += r.in || 0;
    if (known) f.out += r.out || 0;
    // an edge component's backpressure: the worst agent's
    if (r.bp !== undefined) f.bp = Math.max(f.bp || 0, r.bp);
    const counts = (topo.agents[a].components || {})[c.name] || {};
    f.errors += (counts.exceptions || 0) + (counts.dead_letters || 0);
    f.dead += counts.dead_letters || 0;
  }
  f.lines = [lane.agent ? `on ${lane.agent}` : `on ${agents.length} agents`];
  return f;
}

function box(c, lane, p, f, st, busiest, onSelect, selected) {
  const lines = [...f.lines];
  if (f.errors) lines.push(`⚠ errors ${f.errors}${f.dead ? ` (${f.dead} dead letters)` : ""}`);
  const cls = ["component", c.kind, f.errors ? "failed" : "", ...st.cls];
  if (selected === c.name) cls.push("selected");
  const share = busiest ? (load(c.kind, f) || 0) / busiest : 0;
  const g = svg("g", {
    class: cls.filter(Boolean).join(" "),
    transform: `translate(${p.x} ${p.y})`,
    "data-component": c.name,
    "data-side": lane.side,
    "data-agent": lane.agent || "",
    "data-errors": f.errors, // summed, they are the topologies table's errors
    "data-state": st.state,
    "data-load": share.toFixed(2),
    "data-bp": f.bp === undefined ? "" : f.bp.toFixed(2),
    tabindex: 0,
    role: "button",
    "aria-label": `${c.name}: ${st.state}${f.errors ? `, ${f.errors} errors` : ""}`,
  });
  g.appendChild(svg("rect", { class: "frame", width: BOX_W, height: BOX_H, rx: 6 }));
  g.appendChild(svg("rect", { class: "load", x: 1, y: BOX_H - 6, width: Math.max(0, (BOX_W - 2) * share), height: 5 }));
  g.appendChild(svg("text", { x: 8, y: 17, class: "name" }, `${c.name}  ×${c.parallelism}`));
  if (st.badge) {
    g.appendChild(svg("text", { x: BOX_W - 6, y: 17, class: "badge", "text-anchor": "end" }, st.badge));
  }
  const rateIn = c.kind === "spout" ? "–" : fmtRate(f.in);
  g.appendChild(svg("text", { x: 8, y: 35, class: "rates" }, `in ${rateIn} · out ${fmtRate(f.out)}`));
  lines.forEach((text, i) =>
    g.appendChild(svg("text", { x: 8, y: 52 + i * 15, class: i ? "warn" : "detail" }, text)),
  );
  g.addEventListener("click", () => onSelect(c.name));
  g.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      onSelect(c.name);
    }
  });
  return g;
}

// a diagnosed component's box: its kind above it, the reason as its tooltip
function mark(g, d) {
  g.setAttribute("class", `${g.getAttribute("class")} diagnosed ${d.kind}`);
  g.setAttribute("data-diagnosis", d.kind);
  const tasks = (d.tasks || []).length ? ` (task ${d.tasks.join(", ")})` : "";
  g.insertBefore(svg("title", {}, `${d.kind}${tasks}: ${d.reason || ""}`), g.firstChild);
  g.appendChild(svg("text", { x: 2, y: -5, class: "diagnosis-label" }, `⚠ ${d.kind}${tasks}`));
}
