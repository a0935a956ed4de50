// The nodes page: every worker and agent the master knows, online or not, with its health,
// backlog, uplinks and the revisions it runs; for an admin on the master, per node, Forget
// (DELETE /api/v1/nodes/ID: an offline node holding no containers) and Revoke (POST
// .../revoke: its certificate is refused from now on), each asking first. A row is built
// once per node and its cells rewritten in place, so that a question asked stays open
// while the snapshots come.

import { call } from "./api.js";
import { confirmButton } from "./confirm.js";
import { el, table, ago, bytes } from "./dom.js";

const HEADERS = ["node", "kind", "state", "health", "backlog", "uplink", "revision", "last heartbeat"];

// [text, class] of each cell of node `n`'s row
function cells(n) {
  const uplinks = Object.entries(n.uplinks)
    .map(([t, u]) => `${t}: ${u.connected ? "connected" : "down"}`)
    .join(", ");
  const revisions = Object.entries(n.metrics)
    .filter(([k]) => k.startsWith("revision:"))
    .map(([k, v]) => `${k.slice(9)} r${v}`)
    .join(", ");
  const state = n.online ? "online" : "offline";
  return [
    [n.id, ""],
    [n.kind, ""],
    [state, `online-state ${state}`],
    [[n.online ? n.health : `${n.health} (its last report)`, ...n.reasons].join(": "), `health ${n.health}`],
    [`${bytes(n.backlog_bytes)} (${n.backlog_batches} batches)`, "backlog"],
    [uplinks || "–", "uplink"],
    [revisions || "–", ""],
    [ago(n.last_heartbeat_s_ago), ""],
  ];
}

function actions(id) {
  const path = `/api/v1/nodes/${encodeURIComponent(id)}`;
  return el(
    "td",
    { class: "actions" },
    confirmButton(
      `forget-${id}`,
      "Forget",
      `Forget ${id}? The master drops its record (an offline node holding no containers only).`,
      `Yes, forget ${id}`,
      () => call(path, { method: "DELETE" }),
    ),
    " ",
    confirmButton(
      `revoke-${id}`,
      "Revoke",
      `Revoke ${id}? Its certificate and its id are refused from now on, for good: the node comes back only under another id.`,
      `Yes, revoke ${id}`,
      () => call(`${path}/revoke`, { method: "POST" }),
    ),
  );
}

export function nodes(root, ctx) {
  const rows = new Map(); // node id -> its row
  const body = el("tbody", {});
  const empty = el("p", { class: "hint" }, "No node has joined yet.");
  const headers = ctx.canAdmin ? [...HEADERS, ""] : HEADERS;
  const grid = table(headers, [], {});
  grid.querySelector("tbody").replaceWith(body);
  root.append(el("h1", {}, "Nodes"), el("div", { id: "nodes" }, grid, empty));
  return {
    update(snap) {
      const ids = new Set(snap.nodes.map((n) => n.id));
      for (const [id, row] of rows) {
        if (!ids.has(id)) {
          row.remove();
          rows.delete(id);
        }
      }
      let previous = null;
      for (const n of snap.nodes) {
        let row = rows.get(n.id);
        if (!row) {
          row = el("tr", { "data-node": n.id }, ...HEADERS.map(() => el("td", {})));
          if (ctx.canAdmin) row.append(actions(n.id));
          rows.set(n.id, row);
        }
        if (row.previousElementSibling !== previous || !row.parentNode) {
          body.insertBefore(row, previous ? previous.nextElementSibling : body.firstChild);
        }
        previous = row;
        row.className = n.online ? "online" : "offline";
        cells(n).forEach(([text, cls], i) => {
          const td = row.children[i];
          if (td.textContent !== text) td.textContent = text;
          if (td.className !== cls) td.className = cls;
        });
      }
      empty.hidden = snap.nodes.length > 0;
      grid.hidden = !snap.nodes.length;
    },
  };
}
