// The console's views, one per hash route. Each mounts once into `root` and answers
// {update(snap, rates)}, called on every snapshot; parts that hold a user's input (the
// edit form) are built once and only fed new data.

import { chartsPanel } from "./charts.js";
import { renderDag, fmtRate } from "./dag.js";
import { legend } from "./flow.js";
import { cloudTasks, edgeAgents, observe } from "./tasks.js";
import { zoomable } from "./zoom.js";
import { editPanel, EditResult } from "./edits.js";
import { packagePanel } from "./package.js";
import { movePanel } from "./move.js";
import { rollbackControl } from "./preview.js";
import { healthPanel } from "./health.js";
import { logsPanel } from "./logs.js";
import { submitPanel, topologyControls } from "./cluster.js";
import { exceptionsPanel } from "./exceptions.js";
import { el, table, duration, bytes, link, refresh } from "./dom.js";

export function topologies(root, ctx) {
  const body = el("div", { id: "topologies" });
  root.append(el("h1", {}, "Topologies"), body, ...(ctx.canAdmin ? [submitPanel()] : []));
  return {
    update(snap, rates) {
      const rows = snap.topologies.map((t) =>
        el(
          "tr",
          { "data-topology": t.name },
          el("td", {}, link(`#/topology/${encodeURIComponent(t.name)}`, t.name)),
          el("td", { class: `state ${t.state.toLowerCase()}` }, t.state),
          el("td", {}, t.reliability),
          el("td", {}, String(t.revision)),
          el("td", {}, duration(t.uptime_s)),
          el("td", { class: "rate" }, fmtRate(rates.topologies[t.name])),
          // what the DAG flags, summed (its boxes' figures), with the dead letters among them
          el(
            "td",
            { class: t.errors ? "errors error" : "errors", "data-errors": String(t.errors) },
            t.dead_letters ? `${t.errors} (${t.dead_letters} dead letters)` : String(t.errors),
          ),
          el("td", { class: `health ${t.status.health}` }, t.status.health),
        ),
      );
      body.replaceChildren(
        rows.length
          ? table(
              ["name", "state", "reliability", "revision", "uptime", "rate", "errors", "health"],
              rows,
            )
          : el("p", {}, "No topology runs: submit one with headwater submit."),
      );
    },
  };
}

export function topology(root, ctx, name) {
  let selected = null;
  let current = null; // the newest snapshot's topology, for the logs of a clicked component
  const head = el("div", { class: "head" });
  const dag = zoomable(); // the view the user zoomed and panned to stays across redraws
  const detail = el("section", { class: "detail", id: "component-detail" });
  const edit = ctx.canEdit ? editPanel(name) : null;
  const pkg = ctx.canEdit ? packagePanel(name) : null;
  const move = ctx.canEdit ? movePanel(name) : null; // edge <-> cloud
  const logs = ctx.canReadLogs ? logsPanel(name) : null;
  const health = ctx.hasHealth ? healthPanel(name) : null;
  const controls = topologyControls(name, ctx);
  const exceptions = exceptionsPanel(name);
  const charts = ctx.hasHistory ? chartsPanel(name) : null; // the clicked component over time
  root.append(
    el("h1", {}, `Topology ${name}`),
    el(
      "p",
      { class: "tabs" },
      link(`#/checkpoints/${encodeURIComponent(name)}`, "Checkpoints"),
      " · ",
      link(`#/revisions/${encodeURIComponent(name)}`, "Revisions"),
    ),
    head,
    ...(controls.node ? [controls.node] : []),
    legend(),
    dag.node,
    detail,
    exceptions.node,
    ...(charts ? [charts.node] : []),
    ...(health ? [health.node] : []),
    ...(logs ? [logs.node] : []),
    ...(pkg ? [pkg.node] : []),
    ...(move ? [move.node] : []),
    ...(edit ? [edit.node] : []),
  );
  function select(component) {
    selected = component;
    if (pkg) pkg.select(component);
    if (logs) logs.show(current, component); // fetched on click, not with every snapshot
    if (charts) charts.show(component);
    ctx.redraw();
  }
  return {
    topology: name,
    update(snap, rates) {
      const t = snap.topology;
      current = t;
      if (!t) {
        head.replaceChildren(el("p", { class: "error" }, `No topology named ${name} runs.`));
        dag.clear();
        return;
      }
      refresh(head, [t.state, t.revision, t.reliability, t.status.health, t.status.reasons], () =>
        el(
          "p",
          {},
          el("span", { class: `state ${t.state.toLowerCase()}` }, t.state),
          ` · revision ${t.revision} · ${t.reliability} · health ${t.status.health} `,
          ...(t.status.reasons || []).map((r) => el("span", { class: "warn" }, r)),
        ),
      );
      const diagnosed = health ? health.diagnosed() : undefined;
      dag.show(renderDag(t, rates, select, selected, diagnosed));
      observe(t, snap.time);
      detail.replaceChildren(...(selected ? componentDetail(t, selected, rates) : []));
      if (charts) charts.update(rates);
      if (health) health.update(t);
      controls.update(t);
      exceptions.update(t);
      if (edit) edit.update(t);
      if (pkg) pkg.update(t);
      if (move) move.update(t);
    },
  };
}

// a task's busy share: its busy time's growth between the two last reports that moved it
const busySeen = new Map();
function busyShare(key, busyNs) {
  const now = performance.now();
  const seen = busySeen.get(key);
  if (!seen) busySeen.set(key, { busy: busyNs, at: now, text: "–" });
  else if (busyNs !== seen.busy) {
    const pct = ((busyNs - seen.busy) / 1e4 / Math.max(1, now - seen.at)) | 0;
    Object.assign(seen, { busy: busyNs, at: now, text: `${Math.min(100, Math.max(0, pct))} %` });
  }
  return busySeen.get(key).text;
}

function componentDetail(t, name, rates) {
  const spec = t.components.find((c) => c.name === name);
  if (!spec) return [];
  const out = [el("h2", {}, `${name} (${spec.side}, ${spec.kind}, ×${spec.parallelism})`)];
  if (spec.side === "cloud") {
    out.push(...cloudTasks(t, spec, (task, m) => busyShare(`${t.name}/${task}`, m.busy_ns || 0)));
  } else {
    out.push(...edgeAgents(t, spec, rates));
  }
  const errors = t.exceptions.filter((e) => e.component === name).slice(-10).reverse();
  out.push(el("h3", {}, `Exceptions (${errors.length})`));
  for (const e of errors) {
    out.push(
      el(
        "details",
        { class: "exception" },
        el("summary", {}, `task ${e.task} · ${new Date(e.time_ms).toLocaleTimeString()} · ${e.message}`),
        el("pre", {}, e.traceback || "(no traceback)"),
      ),
    );
  }
  return out;
}

export function checkpoints(root, ctx, name) {
  const body = el("div", { id: "checkpoints" });
  root.append(
    el("h1", {}, `Checkpoints of ${name}`),
    el("p", {}, link(`#/topology/${encodeURIComponent(name)}`, "back to the DAG")),
    body,
  );
  return {
    topology: name,
    update(snap) {
      const t = snap.topology;
      if (!t) return;
      const c = t.checkpoints;
      refresh(body, c, () => [
        el(
          "p",
          {},
          c.exactly_once
            ? `cloud domain · every ${c.interval_s}s · epoch ${c.epoch} · latest complete ${c.latest_complete ?? "none"}`
            : "This topology is not exactly-once: it takes no checkpoints.",
        ),
        ...edgeCheckpoints(t.agents || {}),
        el("h2", {}, "Cloud domain"),
        table(
          ["id", "state", "started", "duration", "acked", "size"],
          c.checkpoints
            .slice()
            .reverse()
            .map((k) =>
              el(
                "tr",
                {},
                el("td", {}, String(k.id)),
                el("td", { class: `cp-state ${k.state}` }, k.state),
                el("td", {}, new Date(k.started * 1000).toLocaleTimeString()),
                el("td", {}, k.duration_ms === null ? "–" : `${Math.round(k.duration_ms)} ms`),
                el("td", {}, String(k.acked)),
                el("td", {}, bytes(k.size_bytes)),
              ),
            ),
          { id: "checkpoint-table" },
        ),
      ]);
    },
  };
}

// each agent's edge domain: its newest checkpoint as the agent last reported it
function edgeCheckpoints(agents) {
  const rows = Object.entries(agents)
    .filter(([, a]) => a.checkpoint)
    .map(([agent, a]) => {
      const k = a.checkpoint;
      return el(
        "tr",
        {},
        el("td", {}, agent),
        el("td", {}, a.online ? "online" : "offline (its last report)"),
        el("td", {}, k.latest ? String(k.latest) : "none"),
        el("td", {}, k.latest ? `${Math.round(k.duration_ms)} ms` : "–"),
        el("td", {}, k.latest ? bytes(k.size_bytes) : "–"),
        el("td", {}, String(k.started)),
        el("td", {}, k.in_progress ? "yes" : "no"),
      );
    });
  if (!rows.length) return [];
  return [
    el("h2", {}, "Edge domains"),
    table(
      ["agent", "state", "latest complete", "duration", "size", "started", "in progress"],
      rows,
      { id: "edge-checkpoint-table" },
    ),
  ];
}

export function revisions(root, ctx, name) {
  const body = el("div", { id: "revisions" });
  const result = new EditResult(() => {
    body.dataset.key = "";
    result.show("reloaded");
  });
  root.append(
    el("h1", {}, `Revisions of ${name}`),
    el("p", {}, link(`#/topology/${encodeURIComponent(name)}`, "back to the DAG")),
    body,
    result.node,
  );
  return {
    topology: name,
    update(snap) {
      const t = snap.topology;
      if (!t) return;
      const r = t.revisions;
      result.update(r);
      refresh(body, [r, ctx.canEdit], () => {
        const shown = r.current; // the revision a rollback from this table is made against
        const rows = r.revisions
          .slice()
          .reverse()
          .map((rec) => {
            const diff = Object.entries(rec.diff || {})
              .filter(([, v]) => v.length)
              .map(([k, v]) => `${k}: ${v.join(", ")}`)
              .join("; ");
            const control =
              ctx.canEdit && rec.status === "applied" && rec.revision !== shown
                ? rollbackControl(name, shown, rec.revision, result)
                : "";
            return el(
              "tr",
              { "data-revision": rec.revision },
              el("td", {}, String(rec.revision)),
              el("td", {}, rec.action),
              el("td", rec.reason ? { title: rec.reason } : {}, rec.author || "–"),
              el("td", {}, new Date(rec.time * 1000).toLocaleString()),
              el("td", {}, diff || "–"),
              el("td", { class: `status ${rec.status}` }, rec.status),
              el("td", { class: "error" }, rec.error || ""),
              el("td", {}, control),
            );
          });
        return [
          el("p", {}, `current: revision ${r.current}`, r.applying ? ` · applying ${r.applying}` : ""),
          table(["rev", "action", "author", "time", "diff", "status", "error", ""], rows, {
            id: "revision-table",
          }),
        ];
      });
    },
  };
}
