// The DAG of one topology as SVG: left to right by longest-path layers, the edge side in a
// band of its own above the cloud side, one lane per agent (or one "×N agents" lane when
// there are many), uplink edges between the sides. A component its health manager diagnoses
// is marked: a class per kind on its box (`diagnosed skew`), the kind written above the box
// and the reason as its tooltip (<title>). Built with createElementNS and textContent only
// (never markup): names come from user code.

const NS = "http://www.w3.org/2000/svg";
const BOX_W = 190;
const BOX_H = 78;
const COL_W = 250;
const ROW_H = 96;
const LANE_PAD = 30;
const LEFT = 130;
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

function pressure(bp) {
  if (bp === undefined) return "flow-none";
  if (bp > 0.5) return "flow-high";
  if (bp > 0.1) return "flow-some";
  return "flow-ok";
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
    role: "img",
    "aria-label": `the DAG of ${topo.name}`,
  });
  const defs = svg("defs");
  const marker = svg("marker", {
    id: "arrow",
    viewBox: "0 0 10 10",
    refX: 10,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: "auto-start-reverse",
  });
  marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
  defs.appendChild(marker);
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

  function line(from, to, cls) {
    const x1 = from.x + BOX_W;
    const y1 = from.y + BOX_H / 2;
    const x2 = to.x;
    const y2 = to.y + BOX_H / 2;
    const mid = (x1 + x2) / 2;
    edgesLayer.appendChild(
      svg("path", {
        d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`,
        class: `edge ${cls}`,
        "marker-end": "url(#arrow)",
      }),
    );
  }

  const cloudLane = lanes.findIndex((lane) => lane.side === "cloud");
  lanes.forEach((lane, li) => {
    for (const c of lane.comps) {
      const to = pos.get(`${li}:${c.name}`);
      for (const input of c.inputs) {
        if (pos.has(`${li}:${input}`)) {
          const bp = lane.side === "cloud" ? (rates.cloud[c.name] || {}).bp : undefined;
          line(pos.get(`${li}:${input}`), to, pressure(bp));
        } else if (lane.side === "cloud") {
          // an edge input: the uplink from every edge lane
          lanes.forEach((other, oi) => {
            if (oi === cloudLane || !pos.has(`${oi}:${input}`)) return;
            const up = other.agent ? topo.agents[other.agent] : null;
            const down = up && (!up.online || up.uplink.connected === 0);
            line(pos.get(`${oi}:${input}`), to, `uplink ${down ? "uplink-down" : "uplink-up"}`);
          });
        }
      }
    }
  });

  lanes.forEach((lane, li) => {
    for (const c of lane.comps) {
      const p = pos.get(`${li}:${c.name}`);
      const g = box(topo, c, lane, p, rates, onSelect, selected);
      const d = diagnosed.get(c.name);
      if (d) mark(g, d);
      boxes.appendChild(g);
    }
  });
  return root;
}

function box(topo, c, lane, p, rates, onSelect, selected) {
  let figures;
  let lines;
  let errors = 0;
  if (lane.side === "cloud") {
    const m = topo.metrics[c.name] || {};
    figures = rates.cloud[c.name] || {};
    errors = (m.exceptions || 0) + (m.dead_letters || 0) + (m.failed || 0);
    const lat = m.latency_us ? `${(m.latency_us / 1000).toFixed(2)} ms` : "–";
    lines = [`lat ${lat} · queue ${m.pending || 0}`];
    if (m.dead_letters) lines.push(`⚠ ${m.dead_letters} dead letters`);
    else if (m.exceptions || m.failed) lines.push(`⚠ ${m.exceptions || 0} exc · ${m.failed || 0} failed`);
  } else {
    const agents = lane.agent ? [lane.agent] : Object.keys(topo.agents);
    const known = agents.filter((a) => rates.edge[a]);
    figures = known.length ? { in: 0, out: 0 } : {}; // no rate before a second snapshot
    for (const a of agents) {
      const r = (rates.edge[a] || {})[c.name] || {};
      if (known.length) figures.in += r.in || 0;
      if (known.length) figures.out += r.out || 0;
      const counts = (topo.agents[a].components || {})[c.name] || {};
      errors += (counts.exceptions || 0) + (counts.dead_letters || 0);
    }
    lines = [lane.agent ? `on ${lane.agent}` : `on ${agents.length} agents`];
    if (errors) lines.push(`⚠ ${errors} exc/dead letters`);
  }
  const cls = ["component", c.kind, errors ? "failed" : "", selected === c.name ? "selected" : ""];
  const g = svg("g", {
    class: cls.join(" ").trim(),
    transform: `translate(${p.x} ${p.y})`,
    "data-component": c.name,
    "data-side": lane.side,
    "data-agent": lane.agent || "",
    "data-errors": errors, // summed, they are the topologies table's errors
    tabindex: 0,
  });
  g.appendChild(svg("rect", { width: BOX_W, height: BOX_H, rx: 6 }));
  g.appendChild(svg("text", { x: 8, y: 17, class: "name" }, `${c.name}  ×${c.parallelism}`));
  const rateIn = c.kind === "spout" ? "–" : fmtRate(figures.in);
  g.appendChild(
    svg("text", { x: 8, y: 35, class: "rates" }, `in ${rateIn} · out ${fmtRate(figures.out)}`),
  );
  lines.forEach((text, i) =>
    g.appendChild(svg("text", { x: 8, y: 53 + i * 16, class: i ? "warn" : "detail" }, text)),
  );
  g.addEventListener("click", () => onSelect(c.name));
  g.addEventListener("keydown", (e) => {
    if (e.key === "Enter") onSelect(c.name);
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
