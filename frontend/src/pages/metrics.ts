// Headline metrics with one definition each (the backend's analyses/metrics.py): a tool result
// lists the ones its page shows under "metrics", with the label, the denominator ("of step
// time") and the definition. Pages draw them from there and never compute or name them again,
// so "Device idle, of step time" reads the same number wherever it appears.

import { formatPercent } from "../base/format";
import type { Card, Tone } from "../widgets/cards";
import { h } from "../widgets/dom";
import type { ToolEnvelope } from "../data/schema.gen";

export interface Metric {
  key: string;
  label: string;
  of: string;
  definition: string;
  valuePercent: number | null;
}

/** The result's metrics by key (a result without "metrics" gives an empty map). */
export function metricsOf(raw: ToolEnvelope): Map<string, Metric> {
  const out = new Map<string, Metric>();
  for (const m of raw.metrics ?? []) {
    out.set(m.key, { key: m.key, label: m.label, of: m.of, definition: m.definition, valuePercent: m.value_percent });
  }
  return out;
}

export function metricValue(m: Metric): string {
  return m.valuePercent === null ? "–" : formatPercent(m.valuePercent);
}

/** A summary card: the metric's label, value and denominator, its definition as the tooltip. */
export function metricCard(m: Metric, opts: { id?: string; tone?: Tone } = {}): Card {
  return { id: opts.id ?? m.key, label: m.label, value: metricValue(m), hint: m.of, title: m.definition, metric: m.key, ...(opts.tone ? { tone: opts.tone } : {}) };
}

/** A key/value row ("Device idle, of step time  68.7%") for a list of facts. */
export function metricRow(m: Metric): HTMLElement {
  return h(
    "div",
    { class: "tbp-kv-row", "data-metric": m.key, title: m.definition },
    h("span", { class: "tbp-kv-key" }, `${m.label}, ${m.of}`),
    h("span", { "data-metric-value": "" }, metricValue(m)),
  );
}
