// The preview of an edit before it is applied: the master validates it (?dry_run=1: loaded
// in a child process and checked as the edit itself would be, nothing proposed) and answers
// the plan diff, shown here: what is attached, replaced, rescaled and removed, what keeps its
// state, which domains switch. Apply sends the same edit against the revision the preview was
// made on (a 409 if the topology moved meanwhile: reload and preview again). A rollback (from
// the revisions view) asks first, its question showing the rollback's diff.

import { call } from "./api.js";
import { confirmButton } from "./confirm.js";
import { el } from "./dom.js";
import { postEdit } from "./edits.js";

// POST an edit (`body`: a JSON {files} object, a Blob (a zip), or none); `preview`: dry run.
export async function sendEdit(topology, query, body, preview) {
  const q = new URLSearchParams({ ...query, ...(preview ? { dry_run: "1" } : {}) });
  const json = body && !(body instanceof Blob);
  return call(`/api/v1/topologies/${encodeURIComponent(topology)}/revisions?${q}`, {
    method: "POST",
    body: json ? JSON.stringify(body) : body,
    type: json ? "application/json" : body ? "application/octet-stream" : undefined,
  });
}

function line(cls, label, names) {
  return el("li", { class: cls }, el("strong", {}, `${label}: `), names.join(", "));
}

// The diff of a dry run's answer as a list.
export function diffList(diff) {
  const rescaled = Object.entries(diff.rescaled || {});
  const replaced = diff.replaced.filter((n) => !(diff.rescaled || {})[n]);
  const items = [];
  if (diff.added.length) items.push(line("added", "attach (starts with empty state)", diff.added));
  if (replaced.length) items.push(line("replaced", "replace (keeps its state)", replaced));
  if (rescaled.length)
    items.push(
      line(
        "rescaled",
        "rescale (keeps its state, split by key)",
        rescaled.map(([n, [a, b]]) => `${n} ${a} → ${b}`),
      ),
    );
  if (diff.removed.length) items.push(line("removed", "remove (its state is dropped)", diff.removed));
  if (diff.unchanged.length) items.push(line("unchanged", "unchanged (keeps its state)", diff.unchanged));
  const where = diff.domains.map((d) => (d === "edge" ? "the edge agents" : "the cloud workers"));
  items.push(line("domains", "switches at a checkpoint", where.length ? where : ["nothing"]));
  return el("ul", { class: "diff" }, ...items);
}

// The preview area: show(what, edit) previews `edit` ({query, body}); Apply posts it.
export class Preview {
  constructor(topology, onApplied) {
    this.topology = topology;
    this.onApplied = onApplied; // (the call's answer) after Apply
    this.node = el("section", { class: "preview", id: "pkg-preview", "aria-live": "polite" });
    this.edit = null;
    this.shown = 0; // which show() the area is for: an older answer arriving late is dropped
  }

  clear() {
    this.shown += 1;
    this.edit = null;
    this.node.replaceChildren();
  }

  async show(what, edit) {
    const mine = ++this.shown;
    this.edit = null;
    this.node.replaceChildren(el("p", { class: "progress" }, `checking ${what}…`));
    const res = await sendEdit(this.topology, edit.query, edit.body, true);
    if (mine !== this.shown) return false; // previewed again meanwhile: that one is shown
    if (res.status === 409 || !res.ok) {
      const why = (res.data && res.data.error) || `HTTP ${res.status}`;
      this.node.replaceChildren(
        el("p", { class: res.status === 409 ? "conflict" : "error", id: "pkg-refused" }, `refused: ${why}`),
      );
      return false;
    }
    this.edit = edit;
    const apply = el("button", { type: "button", id: "pkg-apply" }, "Apply");
    const cancel = el("button", { type: "button", id: "pkg-cancel", class: "quiet" }, "Cancel");
    apply.addEventListener("click", async () => {
      apply.disabled = true;
      const res2 = await sendEdit(this.topology, edit.query, edit.body, false);
      if (mine === this.shown) this.clear(); // not a preview made while it was applying
      this.onApplied(res2);
    });
    cancel.addEventListener("click", () => this.clear());
    this.node.replaceChildren(
      el("h3", {}, `Preview: ${what}, against revision ${edit.query.base}`),
      diffList(res.data.diff),
      el("p", {}, apply, " ", cancel),
    );
    apply.focus();
    return true;
  }
}

// Roll back to `to`, asking first; the question shows the preview of the rollback (its diff).
export function rollbackControl(name, shown, to, result) {
  const query = { action: "rollback", base: String(shown), to: String(to), author: "console" };
  const box = confirmButton(
    `rollback-${to}`,
    `Roll back to ${to}`,
    `Roll back to revision ${to}?`,
    "Yes, roll back",
    () => postEdit(name, query),
    (res) => result.answer(res),
  );
  const button = box.querySelector("button");
  button.classList.add("rollback");
  button.dataset.revision = String(to);
  const diff = el("span", { class: "rollback-diff", id: `rollback-${to}-diff` });
  box.querySelector(".ask").prepend(diff);
  button.addEventListener("click", async () => {
    diff.textContent = "checking…";
    const res = await sendEdit(name, query, null, true);
    diff.replaceChildren(res.ok ? diffList(res.data.diff) : `refused: ${(res.data && res.data.error) || res.status}`);
  });
  return box;
}
