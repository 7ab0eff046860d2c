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
  /** Tooltip: what the value is (a metric's definition). */
  title?: string;
  /** data-metric: the key of a headline metric (pages/metrics.ts), the same on every page. */
  metric?: string;
  /** The value is a name, not a number (a kernel's, an op's): smaller, wrapping anywhere. */
  text?: boolean;
}

// A value with a word this long is a name (a CUDA kernel's runs to hundreds of characters): it
// wraps inside its card instead of running over its neighbours.
const LONGEST_NUMBER_WORD = 24;

function isText(c: Card): boolean {
  return c.text === true || c.value.split(/\s+/).some((w) => w.length > LONGEST_NUMBER_WORD);
}

/** `oneRow`: every card in one row of equal columns (KPIs read side by side), values wrap. */
export function cardRow(cards: readonly Card[], opts: { oneRow?: boolean } = {}): HTMLElement {
  return h(
    "div",
    {
      class: opts.oneRow ? "tbp-cards tbp-cards-one-row" : "tbp-cards",
      style: opts.oneRow ? `grid-template-columns: repeat(${cards.length}, minmax(0, 1fr))` : null,
    },
    cards.map((c) =>
      h(
        "div",
        { class: `tbp-card tbp-tone-${c.tone ?? "neutral"}`, "data-card": c.id ?? c.label, "data-metric": c.metric ?? null, title: c.title ?? null },
        h("div", { class: "tbp-card-label" }, c.label),
        h("div", { class: isText(c) ? "tbp-card-value tbp-card-value-text" : "tbp-card-value", "data-metric-value": c.metric !== undefined ? "" : null, title: isText(c) ? c.value : null }, c.value),
        c.hint ? h("div", { class: "tbp-card-hint" }, c.hint) : null,
      ),
    ),
  );
}

/** A titled block of a page. */
export function section(title: string, ...children: (Node | null)[]): HTMLElement {
  return h("section", { class: "tbp-section" }, h("h2", {}, title), ...children);
}
