// The component detail's logs: the last lines of the logs of the containers the component's
// instances run in (each container's own log, then its instances' logs). Fetched when the
// component is clicked or "Reload logs" is pressed, never in the per-second stream; shown as
// text only (a log holds whatever user code prints). Operators and admins only: the page
// builds no panel for a viewer, and the master refuses a viewer's token anyway.

import { call } from "./api.js";
import { el } from "./dom.js";

export const TAIL = 50;

export function logsPanel(topology) {
  const node = el("section", { class: "detail logs", id: "component-logs" });
  let asked = 0; // the newest request: an older answer that arrives late is dropped
  let last = null; // [snapshot's topology, component] of the newest request

  async function show(t, component) {
    const n = ++asked;
    last = [t, component];
    const spec = t && t.components.find((c) => c.name === component);
    if (!spec) {
      node.replaceChildren();
      return;
    }
    if (spec.side !== "cloud") {
      node.replaceChildren(
        el("h3", {}, "Logs"),
        el("p", {}, "An edge component's logs are on its agents' machines (their workdirs)."),
      );
      return;
    }
    const tasks = Object.entries(t.tasks).filter(([, m]) => m.component === component);
    const containers = [...new Set(tasks.map(([, m]) => m.container))].sort((a, b) => a - b);
    const own = new Set(tasks.map(([task]) => `task-${task}.log`));
    node.replaceChildren(el("h3", {}, "Logs"), el("p", { class: "progress" }, "loading…"));
    const base = `/api/v1/topologies/${encodeURIComponent(topology)}/containers`;
    const answers = await Promise.all(
      containers.map((c) => call(`${base}/${encodeURIComponent(c)}/logs?tail=${TAIL}`)),
    );
    if (n !== asked) return;
    const reload = el("button", { type: "button", id: "logs-reload" }, "Reload logs");
    reload.addEventListener("click", () => show(...last));
    const parts = [
      el("h3", {}, `Logs: the last ${TAIL} lines, as of ${new Date().toLocaleTimeString()} `, reload),
    ];
    if (!containers.length) parts.push(el("p", {}, "No instance of it runs yet."));
    containers.forEach((c, i) => {
      const res = answers[i];
      if (!res.ok) {
        const why = (res.data && res.data.error) || `the master answered ${res.status}`;
        parts.push(el("p", { class: "error", "data-container": c }, `container ${c}: ${why}`));
        return;
      }
      const v = res.data;
      const where = v.node ? ` on ${v.node}` : "";
      const at = (log) => ({ "data-container": c, "data-log": log });
      if (v.worker_log !== undefined) {
        parts.push(logBlock(at("worker"), `container ${c}${where}: worker log`, v.worker_log));
      }
      parts.push(logBlock(at("container"), `container ${c}${where}: container log`, v.container_log));
      for (const f of v.instance_logs || []) {
        if (own.has(f.name)) parts.push(logBlock(at(f.name), `container ${c}: ${f.name}`, f.text));
      }
    });
    node.replaceChildren(...parts);
  }

  return { node, show };
}

// One log as text under its title (`attrs` name it for the tests: data-log, data-container).
export function logBlock(attrs, title, text) {
  return el(
    "div",
    { class: "log", ...attrs },
    el("h4", {}, title),
    el("pre", {}, text || "(empty)"),
  );
}
