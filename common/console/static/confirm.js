// An action that asks first: a button that, clicked, shows "message [Yes, LABEL] [Cancel]"
// in place (no window.confirm: keyboard-usable, and readable by a test), and runs `act` on
// yes. `id` names the parts: #ID (the button), #ID-ask, #ID-confirm, #ID-cancel, #ID-result.
// `act` answers the API call's {ok, status, data}; a refusal is written in the result, or
// handed to `onRefused` when one is given (a form that shows refusals in its own place).

import { el } from "./dom.js";

export function confirmButton(id, text, message, yesText, act, onDone = () => {}, onRefused = null) {
  const button = el("button", { type: "button", id, class: "asks" }, text);
  const yes = el("button", { type: "button", id: `${id}-confirm`, class: "danger" }, yesText);
  const no = el("button", { type: "button", id: `${id}-cancel` }, "Cancel");
  const ask = el("span", { id: `${id}-ask`, class: "conflict ask", hidden: "", role: "alert" });
  ask.append(`${message} `, yes, " ", no);
  const result = el("span", { id: `${id}-result`, "aria-live": "polite" });
  const asking = (on) => {
    ask.hidden = !on;
    button.disabled = on;
    if (on) yes.focus();
    else button.focus();
  };
  button.addEventListener("click", () => {
    result.textContent = "";
    asking(true);
  });
  no.addEventListener("click", () => asking(false));
  ask.addEventListener("keydown", (e) => {
    if (e.key === "Escape") asking(false);
  });
  yes.addEventListener("click", async () => {
    yes.disabled = true;
    let res;
    try {
      res = await act();
    } finally {
      yes.disabled = false;
      asking(false);
    }
    if (res.ok) {
      result.className = "ok";
      result.textContent = "";
      onDone(res);
      return;
    }
    if (onRefused) {
      onRefused(res);
      return;
    }
    result.className = "error";
    result.textContent = `refused: ${(res.data && res.data.error) || res.status}`;
  });
  return el("span", { class: "confirm", id: `${id}-box` }, button, ask, " ", result);
}
