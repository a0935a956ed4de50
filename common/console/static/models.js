// The models page: each model's versions and rollouts (as GET /api/v1/models/NAME and
// .../rollouts give them, with every snapshot), each rollout's waves, the guard values of
// each watch (the canary, each wave) and its outcome; and, for operators and admins, a
// form that rolls a version out (canary, waves, guards) or back, as the CLI does.

import { call } from "./api.js";
import { el, table, bytes, refresh } from "./dom.js";

export function models(root, ctx) {
  const empty = el("p", { id: "no-models" }, "No model: headwater models upload adds one.");
  const body = el("div", { id: "models" }, empty);
  const shown = new Map(); // model -> its tables (refreshed) beside its rollout form (kept)
  root.append(el("h1", {}, "Models"), body);
  return {
    update(snap) {
      empty.hidden = snap.models.length > 0;
      for (const m of snap.models) {
        if (!shown.has(m.name)) {
          const tables = el("div", { class: "model-tables" });
          const section = el("section", { class: "model", "data-model": m.name });
          section.append(el("h2", {}, m.name), tables);
          if (ctx.canEdit) section.append(rolloutForm(m.name, m.latest));
          body.append(section);
          shown.set(m.name, tables);
        }
        refresh(shown.get(m.name), [m.versions, m.rollouts], () => modelTables(m));
      }
    },
  };
}

function modelTables(m) {
  const rollouts = m.rollouts.slice().reverse();
  return [
    table(
      ["version", "kind", "created", "size", "evaluation"],
      m.versions.map((v) =>
        el(
          "tr",
          {},
          el("td", {}, String(v.version)),
          el("td", {}, v.kind || "–"),
          el("td", {}, v.created_at ? new Date(v.created_at * 1000).toLocaleString() : "–"),
          el("td", {}, bytes(v.size)),
          el("td", {}, figures(v.evaluation) || "–"),
        ),
      ),
    ),
    table(
      ["rollout", "kind", "version", "topology/component", "waves", "phase", "figures", "error"],
      rollouts.map((r) =>
        el(
          "tr",
          { "data-rollout": r.id },
          el("td", {}, String(r.id)),
          el("td", {}, r.kind),
          el("td", {}, String(r.version || "previous")),
          el("td", {}, `${r.topology}/${r.component}`),
          el("td", { class: "waves" }, waves(r)),
          el("td", { class: `phase ${r.phase}` }, r.phase),
          el("td", {}, figures(r.figures)),
          el("td", { class: "error" }, r.error || ""),
        ),
      ),
      { class: "rollouts" },
    ),
    table(
      ["rollout", "watched", "agents", "guard values", "verdict"],
      rollouts.flatMap((r) =>
        (r.stages || []).map((s, i) =>
          el(
            "tr",
            { "data-stage": `${r.id}/${i}`, class: s.ok ? "within" : "out-of-bounds" },
            el("td", {}, String(r.id)),
            el("td", {}, s.stage),
            el("td", {}, s.agents.join(", ") || "no agent online"),
            el("td", { class: "guards" }, guardValues(s.guards)),
            el("td", { class: "verdict" }, s.verdict),
          ),
        ),
      ),
      { class: "stages" },
    ),
  ];
}

// "canary site=a, 10% 50% 100%": the steps a rollout goes through (older records: none)
function waves(r) {
  const labels = Object.entries(r.canary || {}).map((kv) => kv.join("="));
  const canary = labels.length ? `canary ${labels.join(",")}` : "";
  const shares = (r.waves || []).length > 1 ? r.waves.map((w) => `${w}%`).join(" ") : "";
  const said = [canary, shares].filter(Boolean).join(", ");
  return said || (r.kind === "rollout" ? "all at once" : "–");
}

function guardValues(guards) {
  return (guards || [])
    .map((g) => {
      const value =
        g.value === null ? "–" : Number.isInteger(g.value) ? g.value : g.value.toFixed(3);
      return `${g.guard}: ${value}${g.ok ? "" : " ✗"}`;
    })
    .join("; ");
}

const SELECTOR = "use LABEL=VALUE[,LABEL=VALUE] (site=a)";

// "site=a, tier=b" -> {site: "a", tier: "b"}, as the CLI's --canary; null when malformed.
export function selectorOf(text) {
  const out = {};
  for (const part of text.split(",")) {
    const at = part.indexOf("=");
    const [key, value] = [part.slice(0, at).trim(), part.slice(at + 1).trim()];
    if (at < 0 || !key || !value) return null;
    out[key] = value;
  }
  return out;
}

// Roll a version out (canary first when a label is given, then waves) or back, as the CLI does.
function rolloutForm(name, latest) {
  const input = (field, attrs) => el("input", { name: field, ...attrs });
  const version = input("version", { type: "number", min: 1, value: latest });
  const topology = input("topology", { type: "text", placeholder: "topology" });
  const component = input("component", { type: "text", placeholder: "component" });
  const canary = input("canary", { type: "text", placeholder: "site=a (optional)" });
  const wavesIn = input("waves", { type: "text", placeholder: "10,50,100 (optional)" });
  const guards = input("guards", { type: "text", placeholder: "score_us/scored<=500; ..." });
  const watch = input("watch_s", { type: "number", min: 0, value: 30 });
  const rate = input("max_anomaly_rate", { type: "number", min: 0, max: 1, step: 0.05, value: 0.2 });
  const out = el("button", { type: "button", class: "rollout" }, "Roll out");
  const back = el("button", { type: "button", class: "rollback-model" }, "Roll back");
  const result = el("p", { class: "rollout-result", "aria-live": "polite" });
  async function send(path, body) {
    const res = await call(`/api/v1/models/${encodeURIComponent(name)}/${path}`, {
      method: "POST",
      body: JSON.stringify(body),
      type: "application/json",
    });
    result.className = `rollout-result ${res.ok ? "progress" : "error"}`;
    result.textContent = res.ok
      ? `${res.data.kind} ${res.data.id}: ${res.data.phase}`
      : `refused: ${(res.data && res.data.error) || res.status}`;
  }
  out.addEventListener("click", () => {
    const body = {
      version: Number(version.value),
      topology: topology.value,
      component: component.value,
      watch_s: Number(watch.value),
      max_anomaly_rate: Number(rate.value),
    };
    if (canary.value.trim()) {
      body.canary = selectorOf(canary.value);
      if (!body.canary) {
        // never dropped: a rollout without its canary would go to every agent at once
        result.className = "rollout-result error";
        result.textContent = `refused: canary ${JSON.stringify(canary.value)}: ${SELECTOR}`;
        return;
      }
    }
    // the master checks them and says what to write (a 400 shown below the form)
    if (wavesIn.value.trim()) body.waves = wavesIn.value.split(",").map((w) => Number(w.trim()));
    const given = guards.value.split(";").map((g) => g.trim()).filter(Boolean);
    if (given.length) body.guards = given;
    send("rollouts", body);
  });
  back.addEventListener("click", () =>
    send("rollback", { topology: topology.value, component: component.value }),
  );
  return el(
    "div",
    { class: "rollout-form" },
    el("label", {}, "Version ", version),
    el("label", {}, "Topology ", topology),
    el("label", {}, "Component ", component),
    el("label", {}, "Canary ", canary),
    el("label", {}, "Waves (%) ", wavesIn),
    el("label", {}, "Guards ", guards),
    el("label", {}, "Watch (s) ", watch),
    el("label", {}, "Max anomaly rate ", rate),
    out,
    back,
    result,
  );
}

function figures(values) {
  return Object.entries(values || {})
    .filter(([k, v]) => typeof v === "number" && k !== "version")
    .map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(3)}`)
    .join(", ");
}
