// Move components between the edge and the cloud (issue 37), from a topology's page
// (operators and admins: a viewer's page never has it, and the API refuses a viewer). Pick
// the components (each shown where it runs now) and where to (cloud, every agent, or the
// agents whose label is LABEL=VALUE), then Preview: the master checks the move and answers its
// plan diff (?dry_run=1, nothing changed), or its refusal, shown here as it says it. Apply asks
// first, then sends that same move against the revision the preview was made on (a 409 if
// someone changed the topology meanwhile: reload and preview again); the result follows the
// new revision until it is applied. A move that checks out but whose live switch is not built
// yet is said so by the preview (the master's words), with no Apply: applying it is a 501.

import { call } from "./api.js";
import { confirmButton } from "./confirm.js";
import { el } from "./dom.js";
import { EditResult } from "./edits.js";
import { diffList } from "./preview.js";

// POST a move; `preview`: a dry run. Answers the call's {status, ok, data}, never throws.
export async function postMove(topology, query, preview) {
  const q = new URLSearchParams({ ...query, ...(preview ? { dry_run: "1" } : {}) });
  try {
    return await call(`/api/v1/topologies/${encodeURIComponent(topology)}/move?${q}`, {
      method: "POST",
    });
  } catch (err) {
    return { status: 0, ok: false, data: { error: `the master did not answer (${err.message})` } };
  }
}

// Where a component of a snapshot runs, as the master reads a placement: cloud, edge or
// edge(LABEL=VALUE,...).
export function placementOf(spec) {
  if (spec.side !== "edge") return "cloud";
  const pairs = Object.entries(spec.selector || {}).sort(([a], [b]) => (a < b ? -1 : 1));
  return pairs.length ? `edge(${pairs.map(([k, v]) => `${k}=${v}`).join(",")})` : "edge";
}

// The preview's list: the moves first, then the rest of the plan diff (a moved component is
// in the diff's `replaced`, its code unchanged).
function planList(diff, moves) {
  const list = diffList({ ...diff, replaced: diff.replaced.filter((n) => !moves.has(n)) });
  const items = [...moves].map(([n, [from, to]]) => `${n} ${from} → ${to}`);
  list.prepend(el("li", { class: "moved" }, el("strong", {}, "move (its state with it): "), items.join(", ")));
  return list;
}

export function movePanel(name) {
  let base = null; // the revision a preview is made against: the newest the page has seen
  let shown = 0; // which preview the plan area is for: an older answer arriving late is dropped
  let key = "";
  const where = new Map(); // component -> where it runs now
  const baseText = el("span", { id: "move-base" }, "–");
  const picks = el("div", { class: "picks", id: "move-components" });
  const to = el("select", { id: "move-to" });
  to.append(
    el("option", { value: "cloud" }, "cloud"),
    el("option", { value: "edge" }, "edge: every agent"),
    el("option", { value: "labelled" }, "edge(LABEL=VALUE): the agents so labelled"),
  );
  const selector = el("input", {
    id: "move-selector",
    type: "text",
    size: 16,
    placeholder: "site=site0",
    "aria-label": "the agents' label, LABEL=VALUE",
    disabled: "",
  });
  to.addEventListener("change", () => {
    selector.disabled = to.value !== "labelled";
    if (!selector.disabled) selector.focus();
  });
  const previewButton = el("button", { type: "button", id: "move-preview" }, "Preview the move");
  const plan = el("section", { class: "preview", id: "move-plan", "aria-live": "polite" });
  const result = new EditResult(
    () => {
      shown += 1;
      plan.replaceChildren();
      result.show(`preview the move again: against revision ${base}`);
      previewButton.focus();
    },
    "move-result",
    "move-reload",
  );

  const target = () => {
    if (to.value !== "labelled") return to.value;
    const text = selector.value.trim().replace(/^edge\((.*)\)$/, "$1");
    return text ? `edge(${text})` : null;
  };

  async function preview() {
    const chosen = [...picks.querySelectorAll("input:checked")].map((i) => i.value);
    const place = target();
    const mine = ++shown;
    plan.replaceChildren();
    if (!chosen.length || place === null) {
      result.show(chosen.length ? "type the agents' label as LABEL=VALUE (site=site0)" : "pick the components to move", "error");
      (chosen.length ? selector : picks.querySelector("input") || previewButton).focus();
      return;
    }
    const query = { components: chosen.join(","), to: place, base: String(base), author: "console" };
    const what = `${chosen.join(", ")} to ${place}`;
    result.show("");
    plan.replaceChildren(el("p", { class: "progress" }, `checking the move of ${what}…`));
    const res = await postMove(name, query, true);
    if (mine !== shown) return;
    if (!res.ok) {
      plan.replaceChildren();
      result.answer(res); // the master's reason (a 409: reload), never a raw error
      return;
    }
    const moves = new Map(chosen.map((c) => [c, [where.get(c) || "?", place]]));
    const head = el("h3", {}, `Preview: move ${what}, against revision ${query.base}`);
    const notBuilt = res.data.not_built;
    if (notBuilt) {
      // it checks out, but applying it is answered 501: say it as the master does, no Apply
      plan.replaceChildren(
        head,
        planList(res.data.diff, moves),
        el("p", { class: "not-built", id: "move-not-built" }, `not built yet: ${notBuilt}`),
      );
      return;
    }
    const apply = confirmButton(
      "move-apply",
      "Apply",
      `Move ${what}, against revision ${query.base}?`,
      "Yes, move",
      () => postMove(name, query, false),
      (res2) => {
        if (mine === shown) plan.replaceChildren(); // not a preview made while it was applying
        result.answer(res2);
      },
      (res2) => {
        if (mine === shown) plan.replaceChildren();
        result.answer(res2); // the refusal as the master says it; a 409 offers to reload
      },
    );
    const cancel = el("button", { type: "button", id: "move-cancel", class: "quiet" }, "Cancel");
    cancel.addEventListener("click", () => {
      shown += 1;
      plan.replaceChildren();
      previewButton.focus();
    });
    plan.replaceChildren(head, planList(res.data.diff, moves), el("p", {}, apply, " ", cancel));
    apply.querySelector("button").focus();
  }
  previewButton.addEventListener("click", preview);

  const node = el(
    "section",
    { class: "edit move", id: "move-panel" },
    el("h2", {}, "Move between edge and cloud"),
    el("p", {}, "A preview is made against the revision running now: ", baseText),
    el(
      "fieldset",
      { class: "move-what" },
      el("legend", {}, "Components (where each runs now)"),
      picks,
    ),
    el("p", { class: "row" }, el("label", {}, "To ", to), " ", selector, " ", previewButton),
    plan,
    result.node,
  );

  return {
    node,
    update(topo) {
      base = topo.revision;
      baseText.textContent = String(base);
      result.update(topo.revisions);
      const now = topo.components.map((c) => [c.name, placementOf(c)]);
      const fresh = JSON.stringify(now);
      if (fresh === key) return;
      key = fresh;
      const checked = new Set([...picks.querySelectorAll("input:checked")].map((i) => i.value));
      where.clear();
      picks.replaceChildren(
        ...now.map(([n, at]) => {
          where.set(n, at);
          return el(
            "label",
            { class: "pick", "data-component": n },
            el("input", {
              type: "checkbox",
              value: n,
              id: `move-pick-${n}`,
              ...(checked.has(n) ? { checked: "" } : {}),
            }),
            `${n} `,
            el("span", { class: "where", "data-where": at }, `(${at})`),
          );
        }),
      );
    },
  };
}
