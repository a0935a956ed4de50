// Attach from the palette: the Bolt classes the topology's own modules define (that take no
// argument), their public functions (run as a map or filter of a row, or a keyed step of
// (state, row) as the IoT example's are) and the platform's steps (a tap, on any topology),
// found by the master's child loader (GET .../files, "palette"). An attach is the running package with the component
// added to headwater_attached.json beside the topology file, which every process loading
// the file applies; it reads the chosen component's stream.

import { el } from "./dom.js";

export const SIDECAR = "headwater_attached.json";

// the sidecar's path beside the topology file `entry`
export function sidecarPath(entry) {
  const cut = entry.lastIndexOf("/");
  return cut < 0 ? SIDECAR : `${entry.slice(0, cut + 1)}${SIDECAR}`;
}

// the sidecar's list as the files have it now ([] for none)
export function attached(files) {
  const text = files.doc ? files.text(sidecarPath(files.doc.entry)) : null;
  try {
    const list = JSON.parse(text || "[]");
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

function uniqueName(step, taken) {
  const stem = step.split(":").pop().toLowerCase().replace(/[^a-z0-9_]/g, "_");
  let n = 1;
  while (taken.has(`${stem}_${n}`)) n += 1;
  return `${stem}_${n}`;
}

// The palette form; preview(what, edit) shows the preview of the attach it builds.
export function palettePanel(files, components, preview) {
  const step = el("select", { id: "palette-step" });
  const doc = el("p", { class: "hint", id: "palette-doc" });
  const name = el("input", { id: "palette-name", type: "text", size: 14 });
  const input = el("select", { id: "palette-input" });
  const grouping = el("input", { id: "palette-grouping", type: "text", value: "shuffle", size: 14 });
  const where = el("select", { id: "palette-placement" });
  for (const w of ["cloud", "edge"]) where.appendChild(el("option", { value: w }, w));
  const count = el("input", { id: "palette-parallelism", type: "number", min: 1, value: 1 });
  // a function: how it runs, its key field (keyed), what it emits (blank: the input's fields)
  const run = el("select", { id: "palette-run" });
  for (const r of ["map", "filter", "keyed"]) run.appendChild(el("option", { value: r }, r));
  const key = el("input", { id: "palette-key", type: "text", size: 10 });
  const outputs = el("input", { id: "palette-outputs", type: "text", size: 24, placeholder: "as its input" });
  const asFunction = el(
    "span",
    { class: "row", id: "palette-function", hidden: "" },
    el("label", {}, "Run as ", run),
    el("label", {}, "Key field ", key),
    el("label", {}, "Outputs ", outputs),
  );
  const go = el("button", { type: "button", id: "palette-preview" }, "Preview attach");
  const node = el(
    "fieldset",
    { class: "palette", id: "palette" },
    el("legend", {}, "Attach from the palette"),
    el("label", {}, "Step ", step),
    doc,
    el("label", {}, "Name ", name),
    el("label", {}, "Reads ", input),
    el("label", {}, "Grouping ", grouping),
    el("label", {}, "Placement ", where),
    el("label", {}, "Parallelism ", count),
    asFunction,
    go,
  );
  const taken = () => new Set([...components().map((c) => c.name), ...attached(files).map((a) => a.name)]);
  const chosen = () => ((files.doc && files.doc.palette) || []).find((p) => p.step === step.value);
  const describe = () => {
    const item = chosen();
    asFunction.hidden = !item || item.kind !== "function";
    if (item && item.kind === "function") run.value = item.takes === 2 ? "keyed" : "map";
    doc.textContent = item ? `${item.doc}${item.file ? ` (${item.file}:${item.line})` : " (platform)"}` : "";
    name.value = uniqueName(step.value || "step", taken());
    key.disabled = run.value !== "keyed";
  };
  step.addEventListener("change", describe);
  run.addEventListener("change", () => (key.disabled = run.value !== "keyed"));
  go.addEventListener("click", () => {
    const item = chosen();
    let by = grouping.value.trim() || "shuffle";
    const entry = { name: name.value.trim(), step: step.value };
    if (item && item.kind === "function") {
      Object.assign(entry, { step: run.value, fn: item.step });
      if (run.value === "keyed") {
        entry.key = key.value.trim();
        if (by === "shuffle") by = `fields:${entry.key}`; // each key's state on one task
      }
      const fields = outputs.value.split(",").map((f) => f.trim()).filter(Boolean);
      if (fields.length) entry.outputs = fields;
    }
    Object.assign(entry, {
      inputs: { [input.value]: by },
      parallelism: count.value.trim() ? Number(count.value) : 1, // 0 is refused, not made 1
      placement: where.value,
    });
    const list = [...attached(files), entry];
    const path = sidecarPath(files.doc.entry);
    preview(`attach ${entry.name} (${entry.fn || entry.step}) reading ${input.value}`, {
      query: { action: "attach", base: String(files.doc.revision), author: "console", components: entry.name },
      body: { files: { [path]: `${JSON.stringify(list, null, 1)}\n` } },
    });
  });
  return {
    node,
    // the palette of the files loaded, and the components one may read
    update() {
      const items = (files.doc && files.doc.palette) || [];
      const was = step.value;
      step.replaceChildren(
        ...items.map((p) =>
          el("option", { value: p.step }, p.kind === "platform" ? `${p.name} (platform)` : `${p.name}${p.kind === "function" ? "()" : ""} (${p.step})`),
        ),
      );
      if (items.some((p) => p.step === was)) step.value = was;
      const chosen = input.value;
      input.replaceChildren(...components().map((c) => el("option", { value: c.name }, c.name)));
      if (components().some((c) => c.name === chosen)) input.value = chosen;
      describe();
    },
  };
}
