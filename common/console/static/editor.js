// A code editor for Python, served with the page (no CDN, no library): a <textarea> the user
// types in, over a <pre> that shows the same text highlighted (keywords, strings, comments,
// numbers, decorators, the names def and class define). The textarea's own text is
// transparent, its caret is not; both scroll together.
//
// Keys: Tab indents (4 spaces, or every selected line), Shift+Tab dedents; Escape, then Tab,
// leaves the editor (keyboard users are never trapped in it).

import { el } from "./dom.js";

const KEYWORDS = new Set(
  ("False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try " +
    "while with yield match case self").split(" "),
);
// comment | string (triple, or single-line; prefixes r b f u) | decorator | number | name
const TOKEN = new RegExp(
  [
    /(#[^\n]*)/.source,
    /((?:[rRbBfFuU]{1,2})?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))/
      .source,
    /(@[A-Za-z_][\w.]*)/.source,
    /\b(0[xXoObB][\da-fA-F_]+|\d[\d_]*(?:\.[\d_]*)?(?:[eE][+-]?\d+)?j?)/.source,
    /([A-Za-z_]\w*)/.source,
  ].join("|"),
  "g",
);

// The text as highlighted nodes: spans of class tok-{comment,string,decorator,number,keyword,def}.
export function highlight(text) {
  const out = [];
  let at = 0;
  let defining = false;
  for (const m of text.matchAll(TOKEN)) {
    if (m.index > at) out.push(document.createTextNode(text.slice(at, m.index)));
    const [word, comment, string, decorator, number, name] = m;
    let cls = "";
    if (comment) cls = "comment";
    else if (string) cls = "string";
    else if (decorator) cls = "decorator";
    else if (number) cls = "number";
    else if (name && defining) cls = "def";
    else if (name && KEYWORDS.has(name)) cls = "keyword";
    defining = name === "def" || name === "class";
    out.push(cls ? el("span", { class: `tok-${cls}` }, word) : document.createTextNode(word));
    at = m.index + word.length;
  }
  if (at < text.length) out.push(document.createTextNode(text.slice(at)));
  out.push(document.createTextNode("\n")); // a last empty line shows as the textarea's does
  return out;
}

// An editor with `text`; onChange(text) after each edit. Answers {node, textarea, value(),
// set(text), goTo(line)}.
export function codeEditor(id, text = "", onChange = () => {}) {
  const shown = el("pre", { class: "code-hl", "aria-hidden": "true" });
  const input = el("textarea", {
    id,
    class: "code-input",
    spellcheck: "false",
    autocapitalize: "off",
    autocomplete: "off",
    wrap: "off",
    "aria-label": "code",
  });
  const node = el("div", { class: "code-editor" }, shown, input);
  let leaving = false;
  const paint = () => {
    shown.replaceChildren(...highlight(input.value));
    shown.scrollTop = input.scrollTop;
    shown.scrollLeft = input.scrollLeft;
  };
  const edited = () => {
    paint();
    onChange(input.value);
  };
  input.addEventListener("input", edited);
  input.addEventListener("scroll", () => {
    shown.scrollTop = input.scrollTop;
    shown.scrollLeft = input.scrollLeft;
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      leaving = true;
      return;
    }
    if (e.key !== "Tab" || leaving || e.ctrlKey || e.altKey || e.metaKey) {
      leaving = false;
      return;
    }
    e.preventDefault();
    indent(input, e.shiftKey);
    edited();
  });
  input.addEventListener("blur", () => (leaving = false));
  input.value = text;
  paint();
  return {
    node,
    textarea: input,
    value: () => input.value,
    set(value) {
      input.value = value;
      paint();
    },
    // put the caret at the start of `line` (1-based) and scroll it into view
    goTo(line) {
      const lines = input.value.split("\n");
      const at = lines.slice(0, Math.max(0, line - 1)).reduce((n, l) => n + l.length + 1, 0);
      input.focus();
      input.setSelectionRange(at, at);
      const height = parseFloat(getComputedStyle(input).lineHeight) || 16;
      input.scrollTop = Math.max(0, (line - 3) * height);
      shown.scrollTop = input.scrollTop;
    },
  };
}

function indent(input, out) {
  const { selectionStart: start, selectionEnd: end, value } = input;
  const from = value.lastIndexOf("\n", start - 1) + 1;
  if (!out && start === end) {
    input.setRangeText("    ", start, end, "end");
    return;
  }
  const block = value.slice(from, end);
  const lines = block.split("\n");
  const changed = lines.map((l) => (out ? l.replace(/^ {1,4}/, "") : `    ${l}`)).join("\n");
  input.setRangeText(changed, from, end, "select");
}
