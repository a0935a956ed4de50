// The files of the revision a topology runs (GET .../files: operators only, code may hold
// secrets), one open in the code editor; the changes kept per file until they are applied.
// open(component) opens the file and line that define the component's code (the step function
// its factory carries before the class that runs it: smooth's function in iot_steps.py).

import { call } from "./api.js";
import { el, bytes } from "./dom.js";
import { codeEditor } from "./editor.js";

export class Files {
  constructor(topology) {
    this.topology = topology;
    this.doc = null; // the answer of GET .../files
    this.changed = new Map(); // path -> text as edited
    this.path = null;
    this.list = el("ul", { class: "file-list", id: "pkg-files" });
    this.status = el("p", { class: "hint", id: "pkg-file-status" });
    this.editor = codeEditor("pkg-code", "", (text) => this.edited(text));
    this.node = el("div", { class: "files" }, this.list, el("div", { class: "file-view" }, this.status, this.editor.node));
  }

  // (re)load the files of the current revision; forgets unapplied changes
  async load() {
    const res = await call(`/api/v1/topologies/${encodeURIComponent(this.topology)}/files`);
    if (!res.ok) {
      this.status.textContent = `files: ${(res.data && res.data.error) || res.status}`;
      return null;
    }
    this.doc = res.data;
    this.changed.clear();
    const keep = this.path && this.text(this.path) !== null ? this.path : this.doc.entry;
    this.render();
    this.show(keep);
    return this.doc;
  }

  file(path) {
    return this.doc ? this.doc.files.find((f) => f.path === path) : undefined;
  }

  // a file's text as it now is here (edited or not); null for none or not text
  text(path) {
    if (this.changed.has(path)) return this.changed.get(path);
    const f = this.file(path);
    return f ? f.text : null;
  }

  render() {
    this.list.replaceChildren(
      ...this.doc.files.map((f) => {
        const b = el(
          "button",
          { type: "button", class: "file", "data-path": f.path, "aria-pressed": String(f.path === this.path) },
          f.path,
          this.changed.has(f.path) ? " •" : "",
        );
        b.addEventListener("click", () => this.show(f.path));
        return el("li", {}, b, el("span", { class: "hint" }, ` ${bytes(f.size)}`));
      }),
    );
  }

  show(path, line = 1) {
    const f = this.file(path);
    if (!f) return;
    this.path = path;
    const text = this.text(path);
    this.editor.textarea.readOnly = text === null;
    this.editor.set(text === null ? `(${f.why}: not shown)` : text);
    this.status.textContent = `${path}${path === this.doc.entry ? " (the topology file)" : ""} · revision ${this.doc.revision}`;
    this.render();
    if (line > 1) this.editor.goTo(line);
  }

  // open the code that defines `component`; false when the package does not say
  open(component) {
    const where = this.doc && (this.doc.defined[component] || [])[0];
    if (!where) return false;
    this.show(where.file, where.line);
    this.status.textContent += ` · ${component}: ${where.name}, line ${where.line}`;
    return true;
  }

  edited(text) {
    if (!this.path) return;
    const f = this.file(this.path);
    if (f && text === f.text) this.changed.delete(this.path);
    else this.changed.set(this.path, text);
    this.render();
  }

  // {path: text} of the edited files ({} for none)
  changes() {
    return Object.fromEntries(this.changed);
  }
}
