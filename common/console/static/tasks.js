// A clicked component's tasks (cloud) or agents (edge), one row each: counts, rates in and
// out, its share of the component's load, backpressure, queue, latency, busy, restarts and
// errors. Skew: a row carrying over SKEW times its fair share (1/N of the component's load,
// N rows, load at least MIN_LOAD records/s) is marked `skewed` ("▲ hot"); a task whose
// output was blocked over BP_SOME of the time is marked `backpressured` ("‖").

import { BP_HIGH, BP_SOME } from "./flow.js";
import { fmtRate } from "./dag.js";
import { el, table } from "./dom.js";

export const SKEW = 1.5;
export const MIN_LOAD = 1; // records/s: below this a share says nothing
const WINDOW_S = 3; // rates over at least this much history, like main.js's

// the newest task counters of the topology shown, oldest first: [{time, name, tasks}]
let kept = [];

// Keep `t`'s task counters at `time` (the snapshot's), once per snapshot.
export function observe(t, time) {
  if (kept.length && (kept[0].name !== t.name || time < kept[kept.length - 1].time)) kept = [];
  if (kept.length && kept[kept.length - 1].time === time) return;
  kept.push({ time, name: t.name, tasks: t.tasks });
  while (kept.length > 2 && time - kept[1].time >= WINDOW_S) kept.shift();
}

// per-second rates of one task between the oldest and the newest kept
function taskRates(task) {
  const [old, now] = [kept[0], kept[kept.length - 1]];
  const dt = now ? now.time - old.time : 0;
  const a = old && old.tasks[task];
  const b = now && now.tasks[task];
  if (!(dt > 0) || !a || !b) return {};
  const per = (k) => Math.max(0, ((b[k] || 0) - (a[k] || 0)) / dt);
  return { in: per("executed"), out: per("emitted"), bp: per("backpressure_ms") / 1000 };
}

// Each row's share of the load and its skew mark: `loads` per row (undefined: unknown).
export function shares(loads) {
  const total = loads.reduce((s, x) => s + (x || 0), 0);
  const n = loads.length;
  return loads.map((x) => {
    if (x === undefined || !(total > 0)) return { share: undefined, skewed: false };
    const share = x / total;
    return { share, skewed: n > 1 && total >= MIN_LOAD && share > SKEW / n };
  });
}

const pct = (x) => (x === undefined ? "–" : `${Math.round(x * 100)} %`);

function shareCell(s, n) {
  const attrs = { class: s.skewed ? "share skew" : "share" };
  if (s.skewed) attrs.title = `over ${SKEW}× the fair share (${pct(1 / n)})`;
  return el("td", attrs, s.skewed ? `▲ ${pct(s.share)} hot` : pct(s.share));
}

function bpCell(bp, ms) {
  if (bp === undefined) return el("td", { class: "bp" }, `${Math.round(ms)} ms`);
  const cls = bp > BP_HIGH ? "bp bp-high" : bp > BP_SOME ? "bp bp-some" : "bp";
  const text = pct(Math.min(1, bp)); // a report's jitter can make it more, never the truth
  return el("td", { class: cls, title: `${Math.round(ms)} ms in all` }, bp > BP_SOME ? `‖ ${text}` : text);
}

const errorsOf = (m) => (m.exceptions || 0) + (m.dead_letters || 0) + (m.failed || 0);

// The table of cloud component `spec`'s tasks; `busy(task, m)`: its busy share, as text.
export function cloudTasks(t, spec, busy) {
  const tasks = Object.entries(t.tasks).filter(([, m]) => m.component === spec.name);
  const rates = tasks.map(([task]) => taskRates(task));
  const marks = shares(rates.map((r) => (spec.kind === "spout" ? r.out : r.in)));
  const rows = tasks.map(([task, m], i) => {
    const r = rates[i];
    const cls = [marks[i].skewed ? "skewed" : "", r.bp > BP_SOME ? "backpressured" : ""];
    return el(
      "tr",
      { "data-task": task, class: cls.join(" ").trim() },
      el("td", {}, task),
      el("td", {}, String(m.container)),
      el("td", {}, String(m.executed || 0)),
      el("td", {}, String(m.emitted || 0)),
      el("td", { class: "rate" }, spec.kind === "spout" ? "–" : fmtRate(r.in)),
      el("td", { class: "rate" }, fmtRate(r.out)),
      shareCell(marks[i], tasks.length),
      bpCell(r.bp, m.backpressure_ms || 0),
      el("td", {}, String(m.pending || 0)),
      el("td", {}, `${((m.execute_latency_us || 0) / 1000).toFixed(2)} ms`),
      el("td", { class: "busy" }, busy(task, m)),
      el("td", {}, String(m.restarts || 0)),
      el("td", { class: "errors", "data-errors": errorsOf(m) }, String(errorsOf(m))),
    );
  });
  const heads = ["task", "container", "executed", "emitted", "in", "out", "share", "backpressure"];
  heads.push("queue", "latency", "busy", "restarts", "errors");
  return summed(tasks.map(([, m]) => m), table(heads, rows, { id: "instances" }));
}

// The table of edge component `spec` per agent; `rates`: main.js's, their edge part.
export function edgeAgents(t, spec, rates) {
  const agents = Object.entries(t.agents);
  const rs = agents.map(([agent]) => ((rates.edge || {})[agent] || {})[spec.name] || {});
  const marks = shares(rs.map((r) => (spec.kind === "spout" ? r.out : r.in)));
  const counts = agents.map(([, a]) => a.components[spec.name] || {});
  const rows = agents.map(([agent, a], i) =>
    el(
      "tr",
      { "data-agent": agent, class: marks[i].skewed ? "skewed" : "" },
      el("td", {}, agent),
      el("td", {}, a.online ? "online" : "offline"),
      el("td", {}, String(counts[i].executed || 0)),
      el("td", {}, String(counts[i].emitted || 0)),
      el("td", { class: "rate" }, spec.kind === "spout" ? "–" : fmtRate(rs[i].in)),
      el("td", { class: "rate" }, fmtRate(rs[i].out)),
      shareCell(marks[i], agents.length),
      el("td", { class: "errors" }, String(errorsOf(counts[i]))),
    ),
  );
  const heads = ["agent", "", "executed", "emitted", "in", "out", "share", "errors"];
  return summed(counts, table(heads, rows, { id: "instances" }));
}

// the table in a box of its own (it scrolls sideways, not the page) under the errors summed
// as the DAG's box and the topologies table sum them
function summed(ms, tbl) {
  const sum = (k) => ms.reduce((s, m) => s + (m[k] || 0), 0);
  const [dead, crashes, failed] = [sum("dead_letters"), sum("exceptions"), sum("failed")];
  const total = dead + crashes + failed;
  const text = `errors ${total}: ${dead} dead letters, ${crashes} task crashes, ${failed} failed tuples`;
  return [
    el("p", { class: total ? "errors-total error" : "errors-total", "data-errors": total }, text),
    el("p", { class: "hint" }, `share: of the component's load; ▲ hot: over ${SKEW}× a fair share`),
    el("div", { class: "table-scroll" }, tbl),
  ];
}
