// The tokens page (an admin's, on the master; not in the nav for anyone else): every token
// without its secret (GET /api/v1/tokens, fetched on opening and after each change, not with
// the snapshots), a form that creates one (POST: role, lifetime, description) and shows
// its secret once, and per token a Revoke that asks first (DELETE /api/v1/tokens/ID).

import { call } from "./api.js";
import { confirmButton } from "./confirm.js";
import { el, table } from "./dom.js";

const ROLES = ["viewer", "operator", "admin", "worker", "agent"];
const ROLE_HINT =
  "viewer reads; operator also activates, deactivates, edits live, rolls models out and " +
  "reads logs; admin also submits, kills, forgets nodes and manages tokens; worker and " +
  "agent are join tokens that enrol a node";

function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "never";
}

function createForm(onCreated) {
  const role = el("select", { id: "token-role" }, ...ROLES.map((r) => el("option", { value: r }, r)));
  const ttl = el("input", { id: "token-ttl", type: "text", placeholder: "24h (empty: never expires)" });
  const description = el("input", { id: "token-description", type: "text" });
  const button = el("button", { id: "token-create", type: "button" }, "Create");
  const result = el("div", { id: "token-result", "aria-live": "polite" });
  button.addEventListener("click", async () => {
    const body = { role: role.value, description: description.value };
    if (ttl.value.trim()) body.ttl = ttl.value.trim();
    button.disabled = true;
    try {
      const res = await call("/api/v1/tokens", {
        method: "POST",
        body: JSON.stringify(body),
        type: "application/json",
      });
      if (!res.ok) {
        result.replaceChildren(
          el("p", { class: "error" }, `refused: ${(res.data && res.data.error) || res.status}`),
        );
        return;
      }
      const secret = el("input", {
        id: "token-secret",
        type: "text",
        readonly: "",
        value: res.data.token,
        size: "60",
      });
      secret.addEventListener("focus", () => secret.select());
      result.replaceChildren(
        el("p", { class: "ok" }, `token ${res.data.id} (${res.data.role}), expires ${when(res.data.expires)}:`),
        secret,
        el(
          "p",
          { class: "hint" },
          "Copy it now (click it, then Ctrl+C): it is shown this once; the master keeps only its hash.",
        ),
      );
      description.value = "";
      onCreated();
    } finally {
      button.disabled = false;
    }
  });
  return el(
    "section",
    { class: "edit", id: "token-form" },
    el("h2", {}, "Create a token"),
    el("label", {}, "Role ", role),
    el("p", { class: "hint" }, ROLE_HINT),
    el("label", {}, "Lifetime ", ttl),
    el("label", {}, "Description ", description),
    button,
    result,
  );
}

export function tokens(root, ctx) {
  root.append(el("h1", {}, "Tokens"));
  if (!ctx.canAdmin) {
    root.append(el("p", { class: "error" }, "Only an admin manages tokens, on the master."));
    return { update() {} };
  }
  const body = el("div", { id: "tokens" });
  const note = el("p", { id: "tokens-note", "aria-live": "polite" });

  async function load() {
    const res = await call("/api/v1/tokens");
    if (!res.ok) {
      note.className = "error";
      note.textContent = `refused: ${(res.data && res.data.error) || res.status}`;
      return;
    }
    note.textContent = "";
    const rows = res.data.map((t) =>
      el(
        "tr",
        { "data-token": t.id },
        el("td", {}, t.id === ctx.tokenId ? `${t.id} (this page's)` : t.id),
        el("td", { class: "role" }, t.role),
        el("td", {}, t.description || "–"),
        el("td", {}, when(t.created)),
        el("td", {}, when(t.expires)),
        el(
          "td",
          {},
          confirmButton(
            `revoke-token-${t.id}`,
            "Revoke",
            t.id === ctx.tokenId
              ? `Revoke ${t.id}, the token this page uses? You are logged out.`
              : `Revoke ${t.id}? Whoever holds it is refused from now on.`,
            `Yes, revoke ${t.id}`,
            () => call(`/api/v1/tokens/${encodeURIComponent(t.id)}`, { method: "DELETE" }),
            load,
          ),
        ),
      ),
    );
    body.replaceChildren(
      table(["id", "role", "description", "created", "expires", ""], rows, { id: "token-table" }),
    );
  }

  root.append(createForm(load), el("h2", {}, "Tokens"), note, body);
  load();
  return { update() {} };
}
