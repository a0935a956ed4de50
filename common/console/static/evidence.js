// The health report's figures as an operator reads them: a diagnosis's evidence (rates with
// their units, shares as percentages, a skew's hot keys with their shares) and an action's
// component rates before and after it. Text only: keys come from user data.

const pct = (x) => `${Math.round(x * 100)}%`;
const num = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(1));
const perS = (x) => `${num(x)} records/s`;
const perBusyS = (x) => (x < 0 ? "–" : `${num(x)} records per busy s`);

// key: [label, format]; the order shown is this one, unknown keys last, as given
const FIELDS = [
  ["arrival", "arrival", perS],
  ["processed", "processed", perS],
  ["true_processing", "true rate", perBusyS],
  ["task_true_processing", "the task's true rate", perBusyS],
  ["siblings_median", "its siblings' median", null], // a rate: its unit is the kind's
  ["load_share", "share of the component's records", pct],
  ["busy", "busy", pct],
  ["siblings_busy", "siblings busy", pct],
  ["backpressure", "holding its sources back", pct],
  ["parallelism", "tasks", String],
  ["target", "DS2 target", (x) => `${x} tasks`],
  ["cap", "room on its agents", (x) => `${x} tasks`],
  ["ingest_rate", "ingested", perS],
  ["backlog", "ingest backlog", (x) => `${x} records`],
  ["backlog_growth", "backlog growth", perS],
];

// a skew's and a slow instance's figures are its task's, not the component's
const TASK_LABELS = {
  arrival: "the task's arrival",
  load_share: "the task's share of the component's records",
  busy: "the task busy",
};

// a skew's hot keys: each with its share of the component's load and of its task's input
export function hotKeys(keys) {
  if (!Array.isArray(keys) || !keys.length) return "none sampled";
  return keys
    .map((k) => {
      const shares = [];
      if (typeof k.load_share === "number") shares.push(`${pct(k.load_share)} of the load`);
      if (typeof k.share === "number") shares.push(`${pct(k.share)} of its task's`);
      return shares.length ? `${k.key} (${shares.join(", ")})` : String(k.key);
    })
    .join(", ");
}

// [[label, text]...] of a diagnosis's evidence
export function evidence(kind, ev) {
  const out = [];
  const shown = new Set(["hot_keys"]);
  for (const [key, common, format] of FIELDS) {
    if (!(key in ev)) continue;
    const label = kind === "skew" ? TASK_LABELS[key] || common : common;
    shown.add(key);
    const v = ev[key];
    if (typeof v !== "number") out.push([label, String(v)]);
    else if (format) out.push([label, format(v)]);
    else out.push([label, kind === "slow-instance" ? perBusyS(v) : perS(v)]);
  }
  if ("hot_keys" in ev) out.push(["hot keys", hotKeys(ev.hot_keys)]);
  for (const [key, v] of Object.entries(ev)) {
    if (!shown.has(key)) out.push([key, typeof v === "object" ? JSON.stringify(v) : String(v)]);
  }
  return out;
}

// a component's rates over one window (an action's rates_before, rates_after)
export function rates(f) {
  if (!f) return "–";
  const parts = [`in ${num(f.arrival)}/s`, `processed ${num(f.processed)}/s`, `busy ${pct(f.busy)}`];
  if (typeof f.busy_max === "number" && f.busy_max - f.busy >= 0.05) {
    parts.push(`busiest ${pct(f.busy_max)}`);
  }
  return parts.join(", ");
}

// "before → after" of a taken action, saying why an after is missing
export function beforeAfter(t) {
  const outcome = t.outcome || "";
  let after = rates(t.rates_after);
  if (!t.rates_after) {
    if (outcome === "pending") after = t.measuring ? "once applied" : "–";
    else if (outcome === "applied") after = t.measuring ? "measuring" : "not measured";
    else after = "–";
  }
  return `${rates(t.rates_before)} → ${after}`;
}
