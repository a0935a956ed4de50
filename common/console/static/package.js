// Edit the package a topology runs, in place (operators and admins; a viewer's page never has
// it, and the API refuses a viewer): pick a component (here or in the DAG), edit its code in
// the editor, set its parallelism, remove it, attach a step from the palette, or upload a zip
// of the whole package. Each shows the master's preview (the plan diff, nothing applied) and
// Apply sends that same edit against the revision it was made on; the result follows the new
// revision until it is applied or rolled back, then the files of the new revision load.

import { el } from "./dom.js";
import { EditResult } from "./edits.js";
import { Files } from "./files.js";
import { attached, palettePanel, sidecarPath } from "./palette.js";
import { Preview } from "./preview.js";

export function packagePanel(name) {
  let topo = null; // the newest snapshot's topology
  let loading = false;
  let components = [];
  const files = new Files(name);
  const result = new EditResult(() => files.load().then(refreshed), "pkg-result", "pkg-reload");
  const preview = new Preview(name, (res) => result.answer(res));
  const show = (what, edit) => {
    result.show("");
    return preview.show(what, edit);
  };
  const base = () => String(files.doc ? files.doc.revision : topo.revision);

  // -- one component: its code, its parallelism, its removal -----------------------------------
  const pick = el("select", { id: "pkg-component" });
  const openCode = el("button", { type: "button", id: "pkg-open-code" }, "Edit its code");
  const scale = el("input", { id: "pkg-parallelism", type: "number", min: 1, step: 1, size: 4 });
  const rescale = el("button", { type: "button", id: "pkg-rescale" }, "Preview rescale");
  const remove = el("button", { type: "button", id: "pkg-remove" }, "Preview remove");
  const note = el("span", { class: "hint", id: "pkg-note" });
  const spec = () => components.find((c) => c.name === pick.value);
  let scaleShown = ""; // the parallelism this panel last put in the box, not one typed there
  const showScale = () => {
    scaleShown = scale.value = String(spec().parallelism);
  };
  pick.addEventListener("change", () => select(pick.value));
  openCode.addEventListener("click", () => {
    note.textContent = files.open(pick.value) ? "" : `the package does not say where ${pick.value}'s code is`;
  });
  rescale.addEventListener("click", () =>
    show(`rescale ${pick.value} to ${scale.value}`, {
      query: { action: "replace", base: base(), author: "console", parallelism: `${pick.value}:${scale.value}` },
    }),
  );
  remove.addEventListener("click", () => {
    const c = pick.value;
    const list = attached(files);
    const query = { action: "remove", base: base(), author: "console", components: c };
    if (!list.some((a) => a.name === c)) return show(`remove ${c}`, { query });
    // attached from the palette: the sidecar without it
    const rest = list.filter((a) => a.name !== c);
    const path = sidecarPath(files.doc.entry);
    return show(`remove ${c}`, {
      query,
      body: { files: { [path]: rest.length ? `${JSON.stringify(rest, null, 1)}\n` : null } },
    });
  });

  // -- the files: edit in place, then preview the changed files as an edit -------------------
  const codeAction = el("select", { id: "pkg-code-action" });
  for (const a of ["replace", "attach", "remove"]) codeAction.appendChild(el("option", { value: a }, a));
  const previewCode = el("button", { type: "button", id: "pkg-preview-code" }, "Preview the code edit");
  previewCode.addEventListener("click", () => {
    const changes = files.changes();
    if (!Object.keys(changes).length) {
      preview.clear();
      result.show("no file changed: edit one first", "error");
      return;
    }
    show(`${codeAction.value} with ${Object.keys(changes).join(", ")} changed`, {
      query: { action: codeAction.value, base: String(files.doc.revision), author: "console" },
      body: { files: changes },
    });
  });

  // -- a zip of the whole package ---------------------------------------------------------------
  const zip = el("input", { id: "pkg-zip", type: "file", accept: ".zip,application/zip" });
  const zipEntry = el("input", { id: "pkg-zip-entry", type: "text", size: 18 });
  const zipAction = el("select", { id: "pkg-zip-action" });
  for (const a of ["replace", "attach", "remove"]) zipAction.appendChild(el("option", { value: a }, a));
  const previewZip = el("button", { type: "button", id: "pkg-preview-zip" }, "Preview the upload");
  previewZip.addEventListener("click", () => {
    if (!zip.files.length) return result.show("choose a zip of the package first", "error");
    return show(`${zipAction.value} with ${zip.files[0].name}`, {
      query: { action: zipAction.value, base: base(), author: "console", entry: zipEntry.value },
      body: zip.files[0],
    });
  });

  const palette = palettePanel(files, () => components, show);
  const node = el(
    "section",
    { class: "edit package", id: "package-panel" },
    el("h2", {}, "Edit the package"),
    el(
      "div",
      { class: "pkg-grid" },
      el(
        "div",
        { class: "pkg-code" },
        el(
          "div",
          { class: "row" },
          el("label", {}, "Component ", pick),
          openCode,
          el("label", {}, "Parallelism ", scale),
          rescale,
          remove,
          note,
        ),
        files.node,
        el("p", { class: "row" }, el("label", {}, "Apply the changed files as ", codeAction), previewCode),
      ),
      el(
        "div",
        { class: "pkg-side" },
        preview.node,
        result.node,
        palette.node,
        el(
          "fieldset",
          { class: "row" },
          el("legend", {}, "Upload a zip of the package"),
          zip,
          el("label", {}, "Topology file ", zipEntry),
          el("label", {}, "as ", zipAction),
          previewZip,
        ),
      ),
    ),
  );

  function refreshed() {
    if (!files.doc) return;
    zipEntry.value = zipEntry.value || files.doc.entry;
    palette.update();
  }

  function select(component) {
    if (!components.some((c) => c.name === component)) return;
    pick.value = component;
    showScale();
  }

  return {
    node,
    select,
    update(t) {
      topo = t;
      const names = t.components.map((c) => c.name).join("\n");
      const had = components.map((c) => c.name).join("\n");
      components = t.components;
      if (names !== had) {
        const chosen = pick.value;
        pick.replaceChildren(...components.map((c) => el("option", { value: c.name }, c.name)));
        if (components.length) select(components.some((c) => c.name === chosen) ? chosen : components[0].name);
        palette.update();
      }
      const finished = result.update(t.revisions);
      const stale = files.doc && files.doc.revision !== t.revision && !files.changed.size;
      if (!loading && (finished !== null || !files.doc || stale)) {
        loading = true;
        files.load().then(() => {
          loading = false;
          refreshed();
          // a new revision's parallelism, unless the operator typed their own meanwhile
          if (spec() && scale.value === scaleShown) showScale();
        });
      }
    },
  };
}
