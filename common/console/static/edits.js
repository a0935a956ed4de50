// Live edits from the page: attach, replace and remove (a one-file package, zipped here), a
// replace that only changes parallelism (no file), each made against the revision the page
// shows; a 409 offers to reload.
//
// The master takes a zip body (as `headwater edit` sends). A package of one file needs no
// compression, so the page builds a stored zip itself: a local header, the bytes, one
// central directory entry and its end record, with the CRC-32 the format asks for.

import { call } from "./api.js";
import { el } from "./dom.js";

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// A zip holding the one file `name` with `data` (a Uint8Array), stored (no compression).
export function storedZip(name, data) {
  const nameBytes = new TextEncoder().encode(name);
  const crc = crc32(data);
  const DOS_DATE = (0 << 9) | (1 << 5) | 1; // 1980-01-01, as build_package's epoch
  const local = new DataView(new ArrayBuffer(30));
  [
    [0, 0x04034b50, 4], [4, 20, 2], [6, 0x0800, 2], [8, 0, 2], [10, 0, 2], [12, DOS_DATE, 2],
    [14, crc, 4], [18, data.length, 4], [22, data.length, 4], [26, nameBytes.length, 2],
    [28, 0, 2],
  ].forEach(([at, v, n]) => (n === 4 ? local.setUint32(at, v, true) : local.setUint16(at, v, true)));
  const central = new DataView(new ArrayBuffer(46));
  [
    [0, 0x02014b50, 4], [4, 0x0314, 2], [6, 20, 2], [8, 0x0800, 2], [10, 0, 2], [12, 0, 2],
    [14, DOS_DATE, 2], [16, crc, 4], [20, data.length, 4], [24, data.length, 4],
    [28, nameBytes.length, 2], [30, 0, 2], [32, 0, 2], [34, 0, 2], [36, 0, 2],
    [38, 0o100644 * 0x10000, 4], [42, 0, 4],
  ].forEach(([at, v, n]) =>
    n === 4 ? central.setUint32(at, v >>> 0, true) : central.setUint16(at, v, true),
  );
  const cdOffset = 30 + nameBytes.length + data.length;
  const cdSize = 46 + nameBytes.length;
  const end = new DataView(new ArrayBuffer(22));
  [
    [0, 0x06054b50, 4], [4, 0, 2], [6, 0, 2], [8, 1, 2], [10, 1, 2], [12, cdSize, 4],
    [16, cdOffset, 4], [20, 0, 2],
  ].forEach(([at, v, n]) => (n === 4 ? end.setUint32(at, v, true) : end.setUint16(at, v, true)));
  return new Blob([local, nameBytes, data, central, nameBytes, end], {
    type: "application/octet-stream",
  });
}

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
  constructor(onReload) {
    this.node = el("div", { class: "edit-result", id: "edit-result", "aria-live": "polite" });
    this.onReload = onReload;
    this.revision = null;
  }

  show(text, cls = "") {
    this.node.replaceChildren(el("p", { class: cls }, text));
  }

  async answer(res) {
    if (res.status === 409) {
      const button = el("button", { type: "button", id: "edit-reload" }, "Reload");
      button.addEventListener("click", () => this.onReload());
      this.node.replaceChildren(
        el("p", { class: "conflict" }, `changed by someone else — reload (now at revision ${
          res.data.current})`),
        button,
      );
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
  const file = el("input", { id: "edit-file", type: "file", accept: ".py,text/x-python" });
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
  file.addEventListener("change", () => {
    if (file.files.length) entry.value = file.files[0].name;
  });

  apply.addEventListener("click", async () => {
    const chosen = [...picks.querySelectorAll("input:checked")].map((i) => i.value);
    const query = { action: action.value, base: String(base), author: author.value };
    if (chosen.length) query.components = chosen.join(",");
    let body;
    if (file.files.length) {
      body = storedZip(entry.value, new Uint8Array(await file.files[0].arrayBuffer()));
    } else if (code.value.trim()) {
      body = storedZip(entry.value, new TextEncoder().encode(code.value));
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
    el("label", {}, "Topology file ", file),
    code,
    el("label", {}, "File name ", entry),
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
