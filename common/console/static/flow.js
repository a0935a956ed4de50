// What moves in the DAG, as the drawing says it: a box's state (failing, backpressured,
// idle), its load relative to the topology's busiest component, and the width of an edge by
// the records/s it carries. Pure figures and the legend; dag.js draws them.

import { el } from "./dom.js";

export const BP_SOME = 0.1; // a task's output blocked this share of the time: some backpressure
export const BP_HIGH = 0.5; // ... and this much: high backpressure
export const RISING_S = 15; // errors that grew within this many seconds: failing now
export const EDGE_MIN = 1.5; // px, an edge that carries nothing (or nothing known yet)
export const EDGE_MAX = 9; // px, the edge that carries the most

// an edge's colour by its upstream's backpressure (its output blocked, seconds per second)
export function pressure(bp) {
  if (bp === undefined) return "flow-none";
  if (bp > BP_HIGH) return "flow-high";
  if (bp > BP_SOME) return "flow-some";
  return "flow-ok";
}

// A component's load: what its tasks processed per second (a spout: what it emitted).
export function load(kind, fig) {
  return kind === "spout" ? fig.out : fig.in;
}

// the errors each box had, and when they last grew: `${topology}/${lane}/${component}` ->
// {errors, rose}, a page-wide memory (a redraw without a new snapshot changes nothing)
const seen = new Map();

export function rising(key, errors, now = performance.now()) {
  const was = seen.get(key);
  if (!was) seen.set(key, { errors, rose: -Infinity }); // first sight: growth unknown
  else if (errors > was.errors) Object.assign(was, { errors, rose: now });
  else was.errors = errors;
  return now - seen.get(key).rose < RISING_S * 1000;
}

// The state a box is drawn in, the first that holds: failing (its errors grew in the last
// RISING_S s), backpressure (its tasks' output blocked over BP_SOME of the time; high over
// BP_HIGH), idle (nothing in, nothing out), ok; unknown before two snapshots give rates.
// `badge`: the same in a word or two and an icon, for who does not tell the colours apart.
export function boxState(fig, failing) {
  if (failing) return { state: "failing", cls: ["failing"], badge: "✕ failing" };
  if (fig.bp !== undefined && fig.bp > BP_SOME) {
    const pct = `${Math.round(Math.min(1, fig.bp) * 100)}%`;
    const cls = fig.bp > BP_HIGH ? "bp-high" : "bp-some";
    return { state: "backpressure", cls: ["backpressured", cls], badge: `‖ bp ${pct}` };
  }
  if (fig.in === undefined && fig.out === undefined) return { state: "unknown", cls: [], badge: "" };
  if (!fig.in && !fig.out) return { state: "idle", cls: ["idle"], badge: "○ idle" };
  return { state: "ok", cls: [], badge: "" };
}

// Records/s on each edge: the downstream's input rate split over its incoming edges in
// proportion to what each upstream emits (all of it when there is one input); the
// upstream's output when the downstream's input is not known. `edges`: [{up, down, key}]
// of figures ({in, out}) and the downstream's key. Answers the flows, in the same order.
export function flows(edges) {
  const emitted = new Map(); // downstream key -> what its upstreams emit, summed
  const inputs = new Map(); // downstream key -> how many edges feed it
  for (const e of edges) {
    emitted.set(e.key, (emitted.get(e.key) || 0) + (e.up.out || 0));
    inputs.set(e.key, (inputs.get(e.key) || 0) + 1);
  }
  return edges.map((e) => {
    const total = emitted.get(e.key);
    if (e.down.in !== undefined && total > 0) return (e.down.in * (e.up.out || 0)) / total;
    if (e.down.in !== undefined && inputs.get(e.key) === 1) return e.down.in;
    return e.up.out;
  });
}

// an edge's stroke width, from EDGE_MIN to EDGE_MAX px in proportion to the busiest edge's
export function width(flow, busiest) {
  if (!flow || !busiest) return EDGE_MIN;
  return Math.round((EDGE_MIN + (EDGE_MAX - EDGE_MIN) * Math.min(1, flow / busiest)) * 10) / 10;
}

// What size, width, colour and marks mean: shown once beside the DAG.
export function legend() {
  const item = (cls, text, title) =>
    el("li", { title }, el("span", { class: `swatch ${cls}`, "aria-hidden": "true" }), text);
  return el(
    "ul",
    { class: "dag-legend", id: "dag-legend", "aria-label": "legend of the DAG" },
    item("load", "bar: load vs the busiest", "the bar under a box: its records/s, in proportion to the busiest component's"),
    item("width", "edge width: records/s", "an edge's width: the records/s it carries, in proportion to the busiest edge's"),
    item("bp-high", `‖ backpressure > ${BP_HIGH * 100}%`, "its output was blocked over half of the time (hatched)"),
    item("bp-some", `‖ backpressure > ${BP_SOME * 100}%`, "its output was blocked over a tenth of the time"),
    item("failing", "✕ failing", `its errors grew in the last ${RISING_S} s`),
    item("failed", "⚠ errors", "it has errors (crashes, dead letters, failed tuples): the count on the box"),
    item("idle", "○ idle", "nothing in, nothing out"),
  );
}
