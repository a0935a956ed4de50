// The Spark jobs pages (the master's only: whoami says `spark: true` there). The table of
// jobs comes with every snapshot (`spark_jobs`, as GET /api/v1/spark/jobs shows them), so it
// refreshes with the other pages; a job's page adds its settings, its driver's log (operators
// and admins, fetched on opening and on "Reload log", never with the stream) and, for an
// admin, a kill button that asks first. Every field is text: a job's error is whatever its
// code raised.

import { call } from "./api.js";
import { el, table, link, refresh } from "./dom.js";
import { logBlock, TAIL } from "./logs.js";
import { confirmButton } from "./confirm.js";

const path = (name) => `/api/v1/spark/jobs/${encodeURIComponent(name)}`;

// what the pages show of a job: not when its driver last wrote its status (`updated`), so
// that a rewrite saying the same does not redraw the rows under a click
const shown = (j) => ({ ...j, updated: 0 });

function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "–";
}

// "every 10m" as `headwater spark submit --every 10m` says it
function mode(j) {
  if (j.mode !== "every") return j.mode;
  const s = j.every_s;
  for (const [unit, n] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (s >= n && s % n === 0) return `every ${s / n}${unit}`;
  }
  return `every ${s}s`;
}

function stateClass(state) {
  if (state === "failed") return "failed";
  if (["succeeded", "running", "waiting"].includes(state)) return "running";
  return "paused"; // starting, waiting for a worker, worker W offline
}

function result(last) {
  if (!last) return el("td", { class: "result" }, "–");
  return el("td", { class: `result ${last.ok ? "ok" : "error"}` }, last.ok ? "ok" : "failed");
}

function crashLoop(j) {
  return j.crash_loop ? el("span", { class: "crash-loop", title: j.crash_loop }, "crash loop") : "";
}

function row(j) {
  const last = j.last_run;
  return el(
    "tr",
    { "data-job": j.name },
    el("td", {}, link(`#/spark-job/${encodeURIComponent(j.name)}`, j.name)),
    el("td", { class: `state ${stateClass(j.state)}`, "data-state": j.state }, j.state),
    el("td", { class: "mode" }, mode(j)),
    el("td", { class: "node" }, j.node || "–"),
    el("td", { class: "started" }, when(last && last.started)),
    el("td", { class: "ended" }, when(last && last.ended)),
    result(last),
    el("td", { class: "rows-read" }, String(j.rows_read)),
    el("td", { class: "rows-written" }, String(j.rows_written)),
    el("td", { class: "last-error" }, j.last_error ? el("pre", { class: "job-error" }, j.last_error) : ""),
    el("td", { class: "crash" }, crashLoop(j)),
  );
}

export function sparkJobs(root) {
  const body = el("div", { id: "spark-jobs" });
  root.append(el("h1", {}, "Spark jobs"), body);
  return {
    update(snap) {
      const jobs = snap.spark_jobs;
      refresh(body, jobs === undefined ? null : jobs.map(shown), () => {
        if (!jobs) return el("p", {}, "This server runs no Spark jobs: the master does.");
        if (!jobs.length) {
          return el(
            "p",
            { id: "no-spark-jobs" },
            "No Spark job: submit one with ",
            el("code", {}, "headwater spark submit JOB.py"),
            " (add --every 10m to run it every ten minutes, --continuous to keep it running).",
          );
        }
        const heads = ["job", "state", "mode", "node", "last run started", "ended", "result"];
        return table([...heads, "rows read", "written", "last error", ""], jobs.map(row), {
          id: "spark-job-table",
        });
      });
    },
  };
}

export function sparkJob(root, ctx, name) {
  const facts = el("div", { id: "spark-job" });
  const kill = ctx.canKill ? killPanel(name) : null;
  const logs = ctx.canReadLogs ? driverLog(name) : null;
  root.append(
    el("h1", {}, `Spark job ${name}`),
    el("p", {}, link("#/spark", "all Spark jobs")),
    facts,
    ...(logs ? [logs.node] : []),
    ...(kill ? [kill.node] : []),
  );
  if (logs) logs.show();
  return {
    update(snap) {
      const j = (snap.spark_jobs || []).find((x) => x.name === name);
      if (kill) kill.node.hidden = !j;
      refresh(facts, j ? shown(j) : null, () =>
        j
          ? jobFacts(j)
          : el("p", { class: "error" }, `No Spark job named ${name}: killed, or never submitted.`),
      );
    },
  };
}

function jobFacts(j) {
  const last = j.last_run;
  const params = Object.entries(j.params).sort().map(([k, v]) => `${k}=${v}`);
  const rows = [
    ["state", el("span", { class: `state ${stateClass(j.state)}` }, j.state), " ", crashLoop(j)],
    ["mode", mode(j)],
    ["node", j.node || "none yet"],
    ["entry", j.entry],
    ["package", j.package],
    ["Spark master", j.spark_master],
    ["parameters", params.length ? params.join(", ") : "–"],
    ["landing", j.landing || "the worker's --landing"],
    ["warehouse", j.warehouse || "the worker's --warehouse"],
    ["submitted", when(j.submitted)],
    ["runs", `${j.runs} (${j.restarts} restarts of its driver)`],
    [
      "last run",
      last
        ? `${when(last.started)} to ${when(last.ended)}: ${last.ok ? "ok" : "failed"}, ` +
          `${last.rows_read} rows read, ${last.rows_written} written`
        : "none yet",
    ],
    ["last error", j.last_error ? el("pre", { class: "job-error" }, j.last_error) : "–"],
    ["crash loop", j.crash_loop || "–"],
  ];
  return el(
    "table",
    { class: "facts" },
    el(
      "tbody",
      {},
      ...rows.map(([k, ...v]) => el("tr", { "data-fact": k }, el("th", {}, k), el("td", {}, ...v))),
    ),
  );
}

// Kill (admins only: a viewer's or an operator's page has none, and the API refuses them):
// the button asks first; once killed, back to the list.
function killPanel(name) {
  const ask = confirmButton(
    "spark-kill",
    "Kill",
    `Kill Spark job ${name}? Its driver stops and the master removes the job.`,
    `Yes, kill ${name}`,
    () => call(path(name), { method: "DELETE" }),
    () => {
      location.hash = "#/spark";
    },
  );
  const node = el("section", { class: "edit", id: "spark-kill-panel" }, el("h2", {}, "Kill"), ask);
  return { node };
}

// The driver's log as its worker has it (operators and admins).
function driverLog(name) {
  const node = el("section", { class: "detail logs", id: "job-logs" });
  let asked = 0; // the newest request: an older answer that arrives late is dropped

  async function show() {
    const n = ++asked;
    node.replaceChildren(el("h3", {}, "Driver log"), el("p", { class: "progress" }, "loading…"));
    const res = await call(`${path(name)}/logs?tail=${TAIL}`);
    if (n !== asked) return;
    const reload = el("button", { type: "button", id: "logs-reload" }, "Reload log");
    reload.addEventListener("click", show);
    const at = new Date().toLocaleTimeString();
    const parts = [el("h3", {}, `Driver log: the last ${TAIL} lines, as of ${at} `, reload)];
    if (!res.ok) {
      const why = (res.data && res.data.error) || `the master answered ${res.status}`;
      parts.push(el("p", { class: "error" }, why));
    } else {
      const v = res.data;
      const cut = v.driver_log_truncated ? " (fewer lines: the size cap cut the oldest)" : "";
      parts.push(logBlock({ "data-log": "driver" }, `on ${v.node}: ${v.driver_log_path}${cut}`, v.driver_log));
    }
    node.replaceChildren(...parts);
  }

  return { node, show };
}
