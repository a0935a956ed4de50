// Zoom, pan and fit of the DAG: a box that holds each new <svg> renderDag draws (once a
// second) and shows it through a viewBox the user moves. Fit (the default) shows the whole
// DAG at most at 100%, in the window's height left below the box's top; once the user
// zooms or pans, the view stays where they left it across redraws until "fit" again.
// Buttons (+, −, fit, 100%), Ctrl/⌘ + wheel at the pointer, drag (one finger) to pan, two
// fingers to pinch; with the box focused, + and − zoom, 0 fits, 1 is 100%, arrows pan.

import { el } from "./dom.js";

const STEP = 1.25; // one zoom step
const MIN = 0.05;
const MAX = 4;
const PAN = 80; // px an arrow key pans
const DRAG = 4; // px a pointer moves before a press is a drag, not a click

export function zoomable() {
  const box = el("div", {
    class: "dag-box",
    id: "dag",
    tabindex: 0,
    role: "group",
    "aria-label": "the DAG: + and − zoom, 0 fits, 1 is 100%, arrow keys or a drag pan",
    "data-zoom": "fit",
  });
  const readout = el("span", { class: "zoom-readout", id: "zoom-readout", "aria-live": "polite" });
  const button = (id, text, label, act) => {
    const b = el("button", { type: "button", id, title: label, "aria-label": label }, text);
    b.addEventListener("click", () => {
      act();
      apply();
    });
    return b;
  };
  let svg = null;
  let natural = { w: 0, h: 0 }; // the drawing's own size, svg units
  let size = { w: 0, h: 0, fit: 1 }; // the <svg> element's, px, and the scale that fits
  let view = null; // null: fit; else {x, y, scale}, kept across redraws
  const current = () => view || { x: 0, y: 0, scale: size.fit };

  function zoomAt(factor, cx = size.w / 2, cy = size.h / 2) {
    const v = current();
    const scale = Math.min(MAX, Math.max(MIN, v.scale * factor));
    const px = v.x + cx / v.scale; // the drawing's point under (cx, cy) stays there
    const py = v.y + cy / v.scale;
    view = { x: px - cx / scale, y: py - cy / scale, scale };
  }
  function pan(dx, dy) {
    const v = current();
    view = { x: v.x - dx / v.scale, y: v.y - dy / v.scale, scale: v.scale };
  }
  const tools = el(
    "div",
    { class: "dag-tools", role: "toolbar", "aria-label": "zoom the DAG" },
    button("zoom-in", "+", "zoom in", () => zoomAt(STEP)),
    button("zoom-out", "−", "zoom out", () => zoomAt(1 / STEP)),
    button("zoom-fit", "fit", "fit the whole DAG", () => (view = null)),
    button("zoom-100", "100%", "zoom to 100%", () => zoomAt(1 / current().scale)),
    readout,
  );

  function layout() {
    const w = box.clientWidth || natural.w;
    const top = box.getBoundingClientRect().top + window.scrollY;
    const room = Math.max(240, window.innerHeight - top - 16);
    const fit = Math.min(1, w / natural.w, room / natural.h);
    size = { w, h: Math.ceil(natural.h * fit), fit };
  }
  function apply() {
    if (!svg) return;
    const v = current();
    svg.setAttribute("width", size.w);
    svg.setAttribute("height", size.h);
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    const vb = [v.x, v.y, size.w / v.scale, size.h / v.scale].map((n) => Math.round(n * 10) / 10);
    svg.setAttribute("viewBox", vb.join(" "));
    svg.dataset.scale = v.scale.toFixed(3);
    box.dataset.zoom = view ? "manual" : "fit";
    readout.textContent = `${view ? "" : "fit · "}${Math.round(v.scale * 100)}%`;
  }

  // a new drawing: same view, and the focused box (keyboard users) focused again
  function show(next) {
    const focused = document.activeElement;
    const keep =
      focused && box.contains(focused) && focused.dataset && focused.dataset.component !== undefined
        ? [focused.dataset.component, focused.dataset.agent || ""]
        : null;
    svg = next;
    natural = { w: Number(next.getAttribute("width")) || 1, h: Number(next.getAttribute("height")) || 1 };
    layout(); // the box's size does not depend on its drawing: measured before it changes
    apply();
    box.replaceChildren(next);
    if (keep) {
      const again = [...next.querySelectorAll("g.component")].find(
        (g) => g.dataset.component === keep[0] && g.dataset.agent === keep[1],
      );
      if (again) again.focus({ preventScroll: true });
    }
  }

  box.addEventListener("keydown", (e) => {
    const keys = {
      "+": () => zoomAt(STEP),
      "=": () => zoomAt(STEP),
      "-": () => zoomAt(1 / STEP),
      _: () => zoomAt(1 / STEP),
      0: () => (view = null),
      1: () => zoomAt(1 / current().scale),
      ArrowLeft: () => pan(PAN, 0),
      ArrowRight: () => pan(-PAN, 0),
      ArrowUp: () => pan(0, PAN),
      ArrowDown: () => pan(0, -PAN),
    };
    if (!keys[e.key] || e.ctrlKey || e.metaKey || e.altKey) return;
    e.preventDefault();
    keys[e.key]();
    apply();
  });
  box.addEventListener(
    "wheel",
    (e) => {
      if (!e.ctrlKey && !e.metaKey) return; // a plain wheel scrolls the page
      e.preventDefault();
      const r = box.getBoundingClientRect();
      zoomAt(Math.exp(-e.deltaY / 300), e.clientX - r.left, e.clientY - r.top);
      apply();
    },
    { passive: false },
  );

  // drag to pan, pinch to zoom; a drag is no click on the box it started on
  const pointers = new Map(); // pointerId -> {x, y}
  let dragged = false;
  let moved = 0;
  box.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pointers.size === 1) {
      moved = 0;
      dragged = false;
    }
  });
  box.addEventListener("pointermove", (e) => {
    const was = pointers.get(e.pointerId);
    if (!was) return;
    const now = { x: e.clientX, y: e.clientY };
    if (pointers.size === 2) {
      const other = [...pointers.entries()].find(([id]) => id !== e.pointerId)[1];
      const r = box.getBoundingClientRect();
      const ratio = Math.hypot(now.x - other.x, now.y - other.y) / (Math.hypot(was.x - other.x, was.y - other.y) || 1);
      zoomAt(ratio, (now.x + other.x) / 2 - r.left, (now.y + other.y) / 2 - r.top);
      dragged = true;
    } else {
      moved += Math.abs(now.x - was.x) + Math.abs(now.y - was.y);
      if (!dragged && moved > DRAG) {
        dragged = true;
        box.setPointerCapture(e.pointerId);
      }
      if (dragged) pan(now.x - was.x, now.y - was.y);
    }
    pointers.set(e.pointerId, now);
    if (dragged) apply();
  });
  const up = (e) => pointers.delete(e.pointerId);
  box.addEventListener("pointerup", up);
  box.addEventListener("pointercancel", up);
  box.addEventListener(
    "click",
    (e) => {
      if (!dragged) return;
      dragged = false;
      e.stopPropagation();
      e.preventDefault();
    },
    true,
  );

  return {
    node: el("div", { class: "dag-zoom" }, tools, box),
    show,
    clear() {
      svg = null;
      box.replaceChildren();
    },
  };
}
