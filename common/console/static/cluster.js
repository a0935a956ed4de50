// Running the cluster from the page: submit a package (admin, topologies page), and on a
// topology's page activate, deactivate (operator) and kill (admin). Each control is built
// only for a role the API allows (main.js's ctx, from whoami); the API stays the authority,
// and a refusal is shown as it says it. Deactivate and kill ask first (confirm.js).

import { call } from "./api.js";
import { confirmButton } from "./confirm.js";
import { el, link } from "./dom.js";
import { storedZip, zipNames, guessEntry } from "./zip.js";

const topologyPath = (name) => `/api/v1/topologies/${encodeURIComponent(name)}`;

function refusal(res) {
  return `refused: ${(res.data && res.data.error) || `HTTP ${res.status}`}`;
}

// The package the picked files make: one .zip as it is, or .py files zipped here (by their
// names, flat). Answers {names, body} or {error}.
async function packageOf(files) {
  const list = [...files];
  if (!list.length) return { error: "pick a package: a .zip, or the topology's .py files" };
  const zips = list.filter((f) => f.name.endsWith(".zip"));
  if (zips.length) {
    if (list.length > 1) return { error: "pick one .zip, or .py files, not both" };
    const bytes = new Uint8Array(await zips[0].arrayBuffer());
    const names = zipNames(bytes);
    if (names === null) return { error: `${zips[0].name} is not a zip the page can read` };
    return { names, body: new Blob([bytes], { type: "application/zip" }) };
  }
  const names = list.map((f) => f.name);
  if (new Set(names).size !== names.length) return { error: "two files have the same name" };
  const data = await Promise.all(list.map(async (f) => new Uint8Array(await f.arrayBuffer())));
  return { names, body: storedZip(list.map((f, i) => ({ name: f.name, data: data[i] }))) };
}

// The submit form of the topologies page (an admin's on the master only).
export function submitPanel() {
  const files = el("input", {
    id: "submit-files",
    type: "file",
    multiple: "",
    accept: ".zip,.py,application/zip,text/x-python",
  });
  const entry = el("select", { id: "submit-entry" });
  const containers = el("input", {
    id: "submit-containers",
    type: "number",
    min: "1",
    step: "1",
    value: "1",
  });
  const button = el("button", { id: "submit-button", type: "button" }, "Submit");
  const result = el("p", { id: "submit-result", "aria-live": "polite" });
  let picked = null; // the package of the files picked: {names, body} or {error}

  const show = (text, cls, ...more) => {
    result.className = cls;
    result.replaceChildren(text, ...more);
  };
  files.addEventListener("change", async () => {
    picked = await packageOf(files.files);
    entry.replaceChildren();
    if (picked.error) {
      show(picked.error, "error");
      return;
    }
    const guess = guessEntry(picked.names);
    for (const n of picked.names.filter((x) => x.endsWith(".py"))) {
      entry.append(el("option", n === guess ? { value: n, selected: "" } : { value: n }, n));
    }
    show(
      guess ? `${picked.names.length} files; the topology file?` : "no .py file in the package",
      guess ? "" : "error",
    );
  });
  button.addEventListener("click", async () => {
    if (!picked || picked.error) {
      show((picked && picked.error) || "pick a package first", "error");
      return;
    }
    if (!entry.value) {
      show("pick the topology file", "error");
      return;
    }
    const q = new URLSearchParams({ entry: entry.value, containers: containers.value || "1" });
    button.disabled = true;
    show("submitting…", "progress");
    try {
      const res = await call(`/api/v1/topologies?${q}`, {
        method: "POST",
        body: picked.body,
        type: "application/zip",
      });
      if (!res.ok) {
        show(refusal(res), "error");
        return;
      }
      const name = res.data.topology;
      show(`submitted: `, "ok", link(`#/topology/${encodeURIComponent(name)}`, name),
        ` on ${res.data.containers} container(s)`);
    } finally {
      button.disabled = false;
    }
  });
  return el(
    "section",
    { class: "edit submit", id: "submit-panel" },
    el("h2", {}, "Submit a topology"),
    el("label", {}, "Package (a .zip, or the .py files) ", files),
    el("label", {}, "Topology file ", entry),
    el("label", {}, "Containers ", containers),
    button,
    result,
  );
}

// The head of a topology's page: activate, deactivate (operators and admins) and kill
// (admins, on the master). Built once; update(t) enables what the state allows.
export function topologyControls(name, ctx) {
  const result = el("span", { id: "state-result", "aria-live": "polite" });
  const parts = [];
  let activate = null;
  let deactivate = null;
  if (ctx.canOperate) {
    activate = el("button", { type: "button", id: "topology-activate" }, "Activate");
    activate.addEventListener("click", async () => {
      activate.disabled = true;
      const res = await call(`${topologyPath(name)}/activate`, { method: "POST" });
      result.className = res.ok ? "ok" : "error";
      result.textContent = res.ok ? "activated" : refusal(res);
    });
    deactivate = confirmButton(
      "topology-deactivate",
      "Deactivate",
      `Deactivate ${name}? Its spouts stop emitting until it is activated again.`,
      `Yes, deactivate ${name}`,
      () => call(`${topologyPath(name)}/deactivate`, { method: "POST" }),
      () => {
        result.className = "ok";
        result.textContent = "deactivated";
      },
    );
    parts.push(activate, " ", deactivate, " ");
  }
  if (ctx.canAdmin) {
    parts.push(
      confirmButton(
        "topology-kill",
        "Kill",
        `Kill ${name}? Its containers stop and the master forgets it (its state is lost).`,
        `Yes, kill ${name}`,
        () => call(topologyPath(name), { method: "DELETE" }),
        () => {
          location.hash = "#/topologies";
        },
      ),
    );
  }
  const node = el("div", { class: "controls", id: "topology-controls" }, ...parts, " ", result);
  return {
    node: parts.length ? node : null,
    update(t) {
      if (!activate) return;
      activate.disabled = t.state === "RUNNING";
      const button = deactivate.querySelector("#topology-deactivate");
      const asking = !deactivate.querySelector("#topology-deactivate-ask").hidden;
      if (!asking) button.disabled = t.state === "PAUSED";
    },
  };
}
