// Live edits from the page by upload: attach, replace and remove (a one-file package, zipped
// here, or a zip of the whole package as uploaded), a replace that only changes parallelism
// (no file), each made against the revision the page shows; a 409 offers to reload. (Edits
// of the running package's files in place, with a preview first: package.js.)
//
// The master takes a zip body (as `headwater edit` sends): a pasted or uploaded file goes as
// a stored zip of one file, made by zip.js.

import { call } from "./api.js";
import { storedZip } from "./zip.js";
import { el } from "./dom.js";

// POST an edit; answers the call's {status, ok, data}.
export async function postEdit(topology, query, body) {
  const q = new URLSearchParams(query);
  return call(`/api/v1/topologies/${encodeURIComponent(topology)}/revisions?${q}`, {
    method: "POST",
    body,
    type: body ? "application/octet-stream" : undefined,
  });
}

// The result area of an edit: its progress live, or the conflict with a reload button.
export class EditResult {
  constructor(onReload, id = "edit-result", reloadId = "edit-reload") {
    this.node = el("div", { class: "edit-result", id, "aria-live": "polite" });
    this.reloadId = reloadId;
    this.onReload = onReload;
    this.revision = null;
  }

  show(text, cls = "") {
    this.node.replaceChildren(el("p", { class: cls }, text));
  }

  async answer(res) {
    if (res.status === 409) {
      const button = el("button", { type: "button", id: this.reloadId }, "Reload");
      button.addEventListener("click", () => this.onReload());
      this.node.replaceChildren(
        el("p", { class: "conflict" }, `changed by someone else — reload (now at revision ${
          res.data.current})`),
        el("p", { class: "hint" }, res.data.error || ""), // the master's own words
        button,
      );
      return;
    }
    if (res.status === 501) {
      // it checks out, but its switch is not built yet: as the master says it
      this.show(`not built yet: ${(res.data && res.data.error) || "HTTP 501"}`, "not-built");
      return;
    }
    if (!res.ok) {
      this.show(`refused: ${(res.data && res.data.error) || res.status}`, "error");
      return;
    }
    this.revision = res.data.revision;
    this.show(`revision ${this.revision}: checking…`, "progress");
  }

  // follow the revision this page made through the snapshots: applying, applied, rolled back
  update(revisions) {
    if (this.revision === null) return null;
    const rec = revisions.revisions.find((r) => r.revision === this.revision);
    if (!rec) return null;
    const text =
      rec.status === "applied"
        ? `revision ${rec.revision} applied`
        : rec.status === "applying"
          ? `revision ${rec.revision}: switching at a checkpoint…`
          : `revision ${rec.revision} ${rec.status.replace("_", " ")}: ${rec.error}`;
    this.show(text, rec.status === "applied" ? "ok" : rec.status === "applying" ? "progress" : "error");
    if (rec.status === "applying") return null;
    const done = this.revision;
    this.revision = null;
    return done;
  }
}

// The edit form of one topology (operators and admins only: a viewer's page never has it).
export function editPanel(name) {
  let base = null;
  let names = [];
  const baseText = el("span", { id: "edit-base" }, "–");
  const moved = el("span", { class: "warn", id: "edit-moved" });
  const action = el("select", { id: "edit-action" });
  for (const a of ["attach", "replace", "remove"]) action.appendChild(el("option", { value: a }, a));
  const file = el("input", { id: "edit-file", type: "file", accept: ".py,.zip,text/x-python,application/zip" });
  const code = el("textarea", {
    id: "edit-code",
    rows: 10,
    spellcheck: "false",
    placeholder: "or paste the whole topology file as it should now be",
  });
  const entry = el("input", { id: "edit-entry", type: "text", value: `${name}.py` });
  const picks = el("div", { id: "edit-components", class: "picks" });
  const scale = el("input", { id: "edit-parallelism", type: "number", min: "1", step: "1" });
  const author = el("input", { id: "edit-author", type: "text", value: "console" });
  const apply = el("button", { id: "edit-apply", type: "button" }, "Apply");
  const result = new EditResult(() => {
    base = null; // the next snapshot sets it
    result.show("reloaded: edit against the revision shown");
  });
  const zipped = () => file.files.length && file.files[0].name.toLowerCase().endsWith(".zip");
  file.addEventListener("change", () => {
    if (file.files.length && !zipped()) entry.value = file.files[0].name;
  });

  apply.addEventListener("click", async () => {
    const chosen = [...picks.querySelectorAll("input:checked")].map((i) => i.value);
    const query = { action: action.value, base: String(base), author: author.value };
    if (chosen.length) query.components = chosen.join(",");
    let body;
    if (zipped()) {
      body = file.files[0]; // a whole package (its files, as headwater submit zips them)
    } else if (file.files.length) {
      const data = new Uint8Array(await file.files[0].arrayBuffer());
      body = storedZip([{ name: entry.value, data }]);
    } else if (code.value.trim()) {
      body = storedZip([{ name: entry.value, data: new TextEncoder().encode(code.value) }]);
    }
    if (body) query.entry = entry.value;
    if (!body && action.value === "replace" && scale.value) {
      // the running code on N instances of each picked component: no file
      if (!chosen.length) {
        result.show("pick the components to run on other instances", "error");
        return;
      }
      query.parallelism = chosen.map((c) => `${c}:${scale.value}`).join(",");
      delete query.components;
    } else if (!body && action.value !== "remove") {
      result.show(
        `${action.value} needs the topology file: upload it or paste it` +
          (action.value === "replace" ? " (or give a parallelism)" : ""),
        "error",
      );
      return;
    }
    if (action.value !== "attach" && !chosen.length) {
      result.show(`pick the components to ${action.value}`, "error");
      return;
    }
    apply.disabled = true;
    try {
      await result.answer(await postEdit(name, query, body));
    } finally {
      apply.disabled = false;
    }
  });

  const node = el(
    "section",
    { class: "edit", id: "edit-panel" },
    el("h2", {}, "Live edit"),
    el("p", {}, "Against revision ", baseText, " ", moved),
    el("label", {}, "Action ", action),
    el("label", {}, "Topology file, or a zip of the package ", file),
    code,
    el("label", {}, "File name (in a zip: the topology file) ", entry),
    el("p", { class: "hint" }, "Components (replace, remove; for attach: the new ones, optional)"),
    picks,
    el("label", {}, "Parallelism ", scale),
    el("p", { class: "hint" }, "replace without a file: the running code on that many instances of each picked component"),
    el("label", {}, "Author ", author),
    apply,
    result.node,
  );

  return {
    node,
    update(topo) {
      if (base === null) base = topo.revision;
      baseText.textContent = String(base);
      moved.textContent =
        topo.revision !== base ? `(the topology is at revision ${topo.revision} now)` : "";
      const finished = result.update(topo.revisions);
      if (finished !== null && topo.revision >= finished) base = topo.revision;
      const current = topo.components.map((c) => c.name);
      if (current.join("\n") !== names.join("\n")) {
        const checked = new Set([...picks.querySelectorAll("input:checked")].map((i) => i.value));
        picks.replaceChildren(
          ...current.map((n) =>
            el(
              "label",
              { class: "pick" },
              el("input", {
                type: "checkbox",
                value: n,
                "data-component": n,
                ...(checked.has(n) ? { checked: "" } : {}),
              }),
              n,
            ),
          ),
        );
        names = current;
      }
    },
  };
}
