// The topology page's health panel: its health manager's report (GET .../health), fetched
// every few seconds, never in the per-second stream: mode, diagnoses with their evidence,
// the actions proposed (recommend) or taken, with the parallelism and the component's rates
// before and after, and what is black-listed. `diagnosed()` gives the DAG the current
// diagnoses by component. Text only (reasons name components, which come from user code).

import { call } from "./api.js";
import { el, table } from "./dom.js";
import { beforeAfter, evidence, rates } from "./evidence.js";

export const EVERY_MS = 5000;

export function healthPanel(topology) {
  const node = el("section", { class: "detail health", id: "health" });
  let fetched = 0;
  let current = null; // the newest snapshot's topology: the parallelism running now
  let diagnosed = new Map(); // component -> its diagnosis in the newest report

  async function load() {
    fetched = Date.now();
    const res = await call(`/api/v1/topologies/${encodeURIComponent(topology)}/health`);
    if (!res.ok) {
      const why = (res.data && res.data.error) || `the master answered ${res.status}`;
      node.replaceChildren(el("h2", {}, "Health"), el("p", { class: "error" }, why));
      diagnosed = new Map();
      return;
    }
    diagnosed = new Map((res.data.diagnoses || []).map((d) => [d.component, d]));
    node.replaceChildren(...render(res.data, current));
  }

  return {
    node,
    diagnosed: () => diagnosed,
    update(t) {
      current = t;
      if (Date.now() - fetched >= EVERY_MS) load();
    },
  };
}

function running(t, component) {
  const spec = t && t.components.find((c) => c.name === component);
  return spec ? spec.parallelism : undefined;
}

function actionRow(a, before, extra) {
  before = before ?? ((a.diagnosis || {}).evidence || {}).parallelism;
  const after = a.parallelism ?? null;
  const change =
    after === null ? (a.tasks || []).map((x) => `task ${x}`).join(", ") : `${before ?? "?"} → ${after}`;
  return el(
    "tr",
    { "data-action": a.kind, "data-component": a.component },
    el("td", {}, a.kind),
    el("td", {}, a.component),
    el("td", {}, change),
    el("td", {}, a.reason || ""),
    ...extra,
  );
}

function render(r, t) {
  const out = [el("h2", {}, "Health "), el("p", { id: "health-mode" }, `mode ${r.mode}`)];
  const diagnoses = r.diagnoses || [];
  out.push(el("h3", {}, `Diagnoses (${diagnoses.length})`));
  for (const d of diagnoses) {
    const figures = evidence(d.kind, d.evidence || {});
    out.push(
      el(
        "div",
        { class: "diagnosis", "data-kind": d.kind, "data-component": d.component },
        el("p", {}, el("b", {}, `${d.kind} ${d.component}: `), d.reason || ""),
        figures.length
          ? el(
              "ul",
              { class: "evidence" },
              ...figures.map(([k, v]) => el("li", { "data-figure": k }, `${k}: ${v}`)),
            )
          : null,
      ),
    );
  }
  const proposed = r.proposed || [];
  if (proposed.length) {
    const rows = proposed.map((a) =>
      actionRow(a, running(t, a.component), [el("td", { class: "rates" }, rates(a.rates))]),
    );
    out.push(el("h3", {}, "Proposed (not applied)"));
    out.push(
      table(["action", "component", "parallelism", "why", "rates now"], rows, {
        id: "health-proposed",
      }),
    );
  }
  const taken = r.taken || [];
  out.push(el("h3", {}, `Actions taken (${taken.length})`));
  if (taken.length) {
    const rows = taken
      .slice(-20)
      .reverse()
      .map((x) =>
        actionRow(x.action || {}, (x.action || {}).before, [
          el("td", {}, x.revision == null ? "–" : String(x.revision)),
          el("td", { class: "outcome" }, x.outcome || ""),
          el("td", { class: "rates" }, beforeAfter(x)),
        ]),
      );
    const head = ["action", "component", "parallelism", "why", "revision", "outcome"];
    out.push(table([...head, "rates before → after"], rows, { id: "health-taken" }));
  }
  for (const b of r.blacklisted || []) {
    const until = new Date(b.until * 1000).toLocaleTimeString();
    out.push(el("p", { class: "warn" }, `black-listed: ${b.kind} ${b.component} until ${until}: ${b.why}`));
  }
  return out;
}
