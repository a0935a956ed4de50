// The console's entry: login, the hash routes, the snapshot stream and the rates.

import { call, lastReason, login, logout, stream, token } from "./api.js";
import * as views from "./views.js";
import { sparkJobs, sparkJob } from "./spark.js";
import { models } from "./models.js";
import { nodes } from "./nodes.js";
import { tokens } from "./tokens.js";

const ROUTES = {
  topologies: views.topologies,
  topology: views.topology,
  nodes,
  checkpoints: views.checkpoints,
  revisions: views.revisions,
  models,
  spark: sparkJobs,
  "spark-job": sparkJob,
  tokens,
};
// Rates a snapshot does not carry (an agent's edge components, one lane each, and every rate
// on a server without a history: an agent's own page) are over at least this much of the
// snapshots kept; the rest are the server's, over its history's last `rates.window_s`.
const WINDOW_S = 10;
const $ = (id) => document.getElementById(id);

let who = null;
let view = null;
let live = null;
let liveTopology;
let history = []; // recent snapshots of the current stream, oldest first

function route() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  const param = rest.length ? decodeURIComponent(rest.join("/")) : null;
  return ROUTES[name] ? { name, param } : { name: "topologies", param: null };
}

function showLogin(reason) {
  who = null;
  if (live) live.close();
  live = null;
  liveTopology = undefined;
  $("view").replaceChildren();
  $("nav").hidden = true;
  $("logout").hidden = true;
  $("who").textContent = "";
  $("live").textContent = "";
  $("login").hidden = false;
  $("login-reason").textContent = reason || "";
  $("token").focus();
}

async function start() {
  const res = await call("/api/v1/whoami");
  if (res.status === 401) return; // logout() already showed the login page
  if (!res.ok) {
    showLogin((res.data && res.data.error) || `the master answered ${res.status}`);
    return;
  }
  who = res.data;
  $("login").hidden = true;
  $("nav").hidden = false;
  $("nav-spark").hidden = !who.spark; // only the master runs Spark jobs
  $("nav-tokens").hidden = !(who.role === "admin" && who.edits); // an admin's, on the master
  $("logout").hidden = who.insecure;
  $("who").textContent = who.insecure
    ? `${who.role} (this server asks no token)`
    : `${who.role} · token ${who.id}`;
  $("who").dataset.role = who.role;
  mount();
}

function mount() {
  const r = route();
  const root = $("view");
  root.replaceChildren();
  window.scrollTo(0, 0);
  const role = who.role === "operator" || who.role === "admin";
  // headwater run's master makes no edits; only the master serves container logs
  const ctx = {
    canEdit: role && who.edits,
    canReadLogs: role && who.logs,
    hasHealth: who.edits, // the master's health managers (any role reads them)
    canKill: who.role === "admin" && who.spark, // a Spark job: only an admin kills one
    canOperate: role, // activate, deactivate (the master's and headwater run's)
    // submit, kill a topology, forget and revoke nodes, tokens: an admin, on the master only
    canAdmin: who.role === "admin" && who.edits,
    tokenId: who.id,
    hasHistory: who.history, // the master's and headwater run's: the charts over time
    redraw,
  };
  view = ROUTES[r.name](root, ctx, r.param);
  const wanted = view.topology || null;
  if (live && wanted === liveTopology) {
    redraw();
    return;
  }
  if (live) live.close();
  history = [];
  liveTopology = wanted;
  live = stream(wanted, onSnapshot, (state) => {
    $("live").textContent = state;
    $("live").dataset.state = state.startsWith("live") ? "live" : "down";
  });
}

function onSnapshot(snap) {
  history.push(snap);
  while (history.length > 2 && snap.time - history[1].time >= WINDOW_S) history.shift();
  $("live").textContent = `live · ${new Date(snap.time * 1000).toLocaleTimeString()}`;
  $("live").dataset.state = "live";
  redraw();
}

function redraw() {
  if (!view || !history.length) return;
  const snap = history[history.length - 1];
  view.update(snap, rates(history[0], snap));
}

function per(now, then, dt) {
  return Math.max(0, ((now || 0) - (then || 0)) / dt);
}

// Per-second rates: the server's (`snap.rates`, from its history over `window_s`) where
// the snapshot carries them, else between the oldest and newest snapshots kept.
export function rates(old, snap) {
  const out = between(old, snap);
  const r = snap.rates;
  if (!r) return out;
  out.window_s = r.window_s;
  out.components = r.components; // every component's, an edge one's summed over its agents
  Object.assign(out.topologies, r.topologies);
  for (const [c, v] of Object.entries(r.components)) {
    if (v.side === "cloud") out.cloud[c] = { in: v.in, out: v.out, bp: v.bp };
  }
  return out;
}

function between(old, snap) {
  const out = { topologies: {}, cloud: {}, edge: {} };
  const dt = snap.time - old.time;
  if (dt <= 0) return out;
  const before = new Map(old.topologies.map((t) => [t.name, t]));
  for (const t of snap.topologies) {
    if (before.has(t.name)) out.topologies[t.name] = per(t.executed, before.get(t.name).executed, dt);
  }
  const t = snap.topology;
  const o = old.topology;
  if (!t || !o || t.name !== o.name) return out;
  for (const [c, m] of Object.entries(t.metrics)) {
    const p = o.metrics[c] || {};
    out.cloud[c] = {
      in: per(m.executed, p.executed, dt),
      out: per(m.emitted, p.emitted, dt),
      bp: per(m.backpressure_ms, p.backpressure_ms, dt) / 1000 / Math.max(1, m.tasks || 1),
    };
  }
  for (const [agent, a] of Object.entries(t.agents)) {
    const before = o.agents[agent] || {};
    const pa = before.components || {};
    // over the time between the agent's reports (every 2 s) when the master says when they
    // came, not between the snapshots: a report falls on either side of a snapshot
    const reported = a.reported_at && before.reported_at ? a.reported_at - before.reported_at : 0;
    const span = reported > 0 ? reported : dt;
    out.edge[agent] = {};
    for (const [c, m] of Object.entries(a.components)) {
      const p = pa[c] || {};
      out.edge[agent][c] = {
        in: per(m.executed, p.executed, span),
        out: per(m.emitted, p.emitted, span),
        // its tasks' output blocked, seconds per second per task (as a cloud component's)
        bp: m.tasks ? per(m.backpressure_ms, p.backpressure_ms, span) / 1000 / m.tasks : undefined,
      };
    }
  }
  return out;
}

window.addEventListener("headwater:logout", () => showLogin(lastReason()));
window.addEventListener("hashchange", () => {
  if (who) mount();
});
document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    login($("token").value);
    $("token").value = "";
    await start();
  });
  $("logout").addEventListener("click", () => logout("logged out"));
  if (token()) start();
  else {
    // a master run --insecure, or an agent's status port, needs no token: try without one
    fetch("/api/v1/whoami", { cache: "no-store" })
      .then((res) => (res.ok ? res.json() : {}))
      .catch(() => ({}))
      .then((data) => (data.insecure ? start() : showLogin(lastReason())));
  }
});
