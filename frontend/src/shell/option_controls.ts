// The options bar under a page's title: each tool option as a checkbox, a select or a bounded
// number input (option_model.ts decides which), grouped, rarely used ones in a closed
// "More options" section. A change writes "o.<name>" to the URL; the shell refetches.

import type { ToolOption } from "../data/types";
import { clear, h } from "../widgets/dom";
import { arrangeOptions, type Control, controlOf, defaultText, type OptionGroup, optionLabel, paramValue } from "./option_model";

export interface OptionsHost {
  /** The URL's value of option `name`, or null (the default). */
  value(name: string): string | null;
  set(name: string, value: string | null): void;
  /** Options with a fixed set of values known to the page (PageSpec.optionChoices). */
  pageChoices?: Readonly<Record<string, readonly string[]>>;
}

function control(o: ToolOption, c: Control, host: OptionsHost): HTMLElement {
  const current = host.value(o.name);
  const label = optionLabel(o.name);
  const title = o.help || null;
  if (c.kind === "checkbox") {
    const input = h("input", { type: "checkbox", "data-option": o.name });
    input.checked = current === null ? o.default === true : ["1", "true", "yes", "on"].includes(current.toLowerCase());
    input.addEventListener("change", () => host.set(o.name, input.checked === (o.default === true) ? null : String(input.checked)));
    return h("label", { class: "tbp-option", title }, input, ` ${label}`);
  }
  if (c.kind === "select") {
    const value = current ?? defaultText(o);
    const sel = h("select", { "data-option": o.name }, c.choices.map((v) => h("option", { value: v, selected: v === value }, v.replace(/_/g, " "))));
    sel.addEventListener("change", () => host.set(o.name, sel.value === defaultText(o) ? null : sel.value));
    return h("label", { class: "tbp-option", title }, `${label} `, sel);
  }
  const input = h("input", {
    type: c.kind === "number" ? "number" : "text",
    "data-option": o.name,
    value: current ?? defaultText(o),
    placeholder: c.kind === "list" ? "comma-separated" : null,
    min: c.kind === "number" ? c.min : null,
    max: c.kind === "number" ? c.max : null,
    step: c.kind === "number" ? c.step : null,
    size: c.kind === "number" ? null : 14,
    class: c.kind === "number" ? "tbp-option-number" : null,
  });
  const error = h("span", { class: "tbp-option-error tbp-error", role: "alert" });
  input.addEventListener("change", () => {
    const { value, error: why } = paramValue(o, c, input.value);
    error.textContent = why ? `(${why})` : "";
    input.setAttribute("aria-invalid", String(why !== null));
    if (why === null) host.set(o.name, value);
  });
  return h("label", { class: "tbp-option", title }, `${label} `, input, error);
}

function groups(list: OptionGroup[], host: OptionsHost): HTMLElement[] {
  return list.map((g) => h("div", { class: "tbp-option-group", "data-option-group": g.title ?? "" },
    g.title ? h("span", { class: "tbp-option-group-title" }, g.title) : null,
    g.options.map((o) => control(o, controlOf(o, host.pageChoices?.[o.name]), host))));
}

/** Fills `bar` with the controls; hides it when there are none. */
export function renderOptionControls(bar: HTMLElement, options: readonly ToolOption[], host: OptionsHost): void {
  clear(bar);
  bar.hidden = options.length === 0;
  if (options.length === 0) return;
  const { main, advanced } = arrangeOptions(options);
  bar.append(...groups(main, host));
  if (advanced.length) {
    const count = advanced.reduce((n, g) => n + g.options.length, 0);
    // Open when one of them is set: the user must see why the page differs from the default.
    const open = advanced.some((g) => g.options.some((o) => host.value(o.name) !== null));
    bar.appendChild(h("details", { class: "tbp-options-more", "data-options-more": "", open },
      h("summary", {}, `More options (${count})`), ...groups(advanced, host)));
  }
}
