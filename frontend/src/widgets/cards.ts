// Summary cards: a row of "label / big value / small hint" boxes at the top of a page.

import { h } from "./dom";

export type Tone = "neutral" | "good" | "warn" | "bad";

export interface Card {
  label: string;
  value: string;
  hint?: string;
  tone?: Tone;
  /** data-card attribute for tests and deep links. */
  id?: string;
}

export function cardRow(cards: readonly Card[]): HTMLElement {
  return h(
    "div",
    { class: "tbp-cards" },
    cards.map((c) =>
      h(
        "div",
        { class: `tbp-card tbp-tone-${c.tone ?? "neutral"}`, "data-card": c.id ?? c.label },
        h("div", { class: "tbp-card-label" }, c.label),
        h("div", { class: "tbp-card-value" }, c.value),
        c.hint ? h("div", { class: "tbp-card-hint" }, c.hint) : null,
      ),
    ),
  );
}

/** A titled block of a page. */
export function section(title: string, ...children: (Node | null)[]): HTMLElement {
  return h("section", { class: "tbp-section" }, h("h2", {}, title), ...children);
}
