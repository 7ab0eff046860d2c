// The "?" panel: every key and mouse gesture of the timeline, visible on demand, where a
// tooltip would hide them from anyone who does not think of hovering.

import { h } from "../../widgets/dom";

/** [keys, what they do], in the order the panel lists them. */
export const KEY_HELP: readonly (readonly [string, string])[] = [
  ["W / S", "zoom in / out (at the pointer)"],
  ["A / D", "pan left / right"],
  ["F", "zoom to the selected event or range"],
  ["0", "show the whole profile"],
  ["Esc", "clear the selection (or close this panel)"],
  ["?", "show or hide this panel"],
  ["wheel", "scroll the tracks up and down"],
  ["ctrl / ⌘ + wheel, pinch", "zoom at the pointer"],
  ["shift + wheel", "pan left / right"],
  ["drag", "pan"],
  ["drag on the time ruler, shift + drag", "select a time range (totals per name below)"],
  ["click", "select an event; click a process header to fold or unfold it"],
];

export function keyHelpPanel(onClose: () => void): HTMLElement {
  return h("section", { class: "tbp-tv-keyhelp", "data-testid": "trace-key-help", hidden: true, role: "dialog", "aria-label": "Keys" },
    h("div", { class: "tbp-tv-head" }, h("strong", {}, "Keys and mouse"),
      h("span", { class: "tbp-muted" }, "click the timeline first so that it has the keyboard"),
      h("span", { class: "tbp-spacer" }),
      h("button", { type: "button", class: "tbp-btn", "aria-label": "Close", onclick: onClose }, "×")),
    h("div", { class: "tbp-tv-keys" }, KEY_HELP.flatMap(([k, what]) => [h("span", {}, h("kbd", {}, k)), h("span", {}, what)])));
}
