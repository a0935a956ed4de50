// A topology's exception history, per component: what its instances reported (and the
// control plane's own errors beside them), newest first, each with its time, task and
// message, the traceback folded. GET .../exceptions (viewer) holds more than the snapshot's
// newest 50: it is fetched again only when the snapshot's newest exception changes, never
// with every snapshot. Where that route is not served (an agent's page) the snapshot's list
// is shown. Tracebacks are user code's text: textContent only.

import { call } from "./api.js";
import { el } from "./dom.js";

function when(ms) {
  return new Date(ms).toLocaleString();
}

function entry(e, key, opened) {
  const node = el(
    "details",
    { class: "exception", "data-task": String(e.task), "data-key": key },
    el(
      "summary",
      {},
      el("span", { class: "exc-time" }, when(e.time_ms)),
      " · ",
      e.task >= 0 ? `task ${e.task}` : "control plane",
      " · ",
      el("span", { class: "exc-message" }, e.message),
    ),
    el("pre", {}, e.traceback || "(no traceback)"),
  );
  node.open = opened.has(key);
  node.addEventListener("toggle", () => (node.open ? opened.add(key) : opened.delete(key)));
  return node;
}

export function exceptionsPanel(name) {
  const body = el("div", { id: "exception-groups" });
  const count = el("span", { id: "exception-count" }, "");
  const node = el(
    "section",
    { class: "detail exceptions", id: "exceptions" },
    el("h2", {}, "Exception history ", count),
    body,
  );
  const opened = new Set(); // the entries and components a reader unfolded, kept on redraw
  let seen = null; // the snapshot's newest exception the list was fetched for
  let order = [];
  let asked = 0; // the newest fetch: an older answer arriving late is dropped

  function draw(list) {
    const groups = new Map(order.map((c) => [c, []]));
    const twins = new Map(); // a key stays its entry's when the list grows or is trimmed
    list.forEach((e) => {
      if (!groups.has(e.component)) groups.set(e.component, []);
      const base = `${e.component}/${e.task}/${e.time_ms}`;
      const n = (twins.get(base) || 0) + 1;
      twins.set(base, n);
      groups.get(e.component).push([e, `${base}/${n}`]);
    });
    const shown = [...groups].filter(([, items]) => items.length);
    count.textContent = `(${list.length})`;
    if (!shown.length) {
      body.replaceChildren(el("p", { class: "hint" }, "No exception reported."));
      return;
    }
    body.replaceChildren(
      ...shown.map(([component, items]) => {
        items.sort((a, b) => b[0].time_ms - a[0].time_ms);
        const group = el(
          "details",
          { class: "exc-component", "data-component": component },
          el(
            "summary",
            {},
            el("strong", {}, component),
            ` · ${items.length} · latest ${when(items[0][0].time_ms)}`,
          ),
          ...items.map(([e, key]) => entry(e, key, opened)),
        );
        const key = `component:${component}`;
        group.open = opened.has(key) || shown.length === 1;
        group.addEventListener("toggle", () => (group.open ? opened.add(key) : opened.delete(key)));
        return group;
      }),
    );
  }

  async function load(t) {
    const mine = ++asked;
    const res = await call(`/api/v1/topologies/${encodeURIComponent(name)}/exceptions`);
    if (mine !== asked) return;
    draw(res.ok && Array.isArray(res.data) ? res.data : t.exceptions);
  }

  return {
    node,
    update(t) {
      order = t.components.map((c) => c.name);
      const last = t.exceptions[t.exceptions.length - 1];
      const key = JSON.stringify([t.exceptions.length, last, order]);
      if (key === seen) return;
      seen = key;
      if (t.exceptions.length) load(t);
      else {
        asked += 1;
        draw([]);
      }
    },
  };
}
