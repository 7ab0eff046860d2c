// Pieces shared by the step-based pages (overview, input pipeline): XProf's step-time
// categories with fixed colours (the same category has the same colour on every page), the
// per-step stacked chart, avg/stddev/min/max tables and diagnostics.

import { formatNumber } from "../base/format";
import type { TableData } from "../data/types";
import { axisLabel, type Chart, unitFormatter } from "../widgets/chart";
import { h } from "../widgets/dom";
import { messageBox } from "../widgets/message";
import type { Diagnostics, Stat, StepsInfo } from "../data/schema.gen";

/** A chart's columns by name ("step", "host", "step_time_ms", "input_ms", ...), as the backend sends them. */
export type StepGraph = Readonly<Record<string, readonly string[] | readonly number[]>>;

export interface Category {
  /** Key stem in the JSON: `${key}_ms` in breakdowns, `${key}_percent` in percentages. */
  key: string;
  label: string;
  color: string;
}

/** XProf's step-time breakdown, in its stacking order. */
export const STEP_CATEGORIES: readonly Category[] = [
  { key: "device_compute", label: "Device compute", color: "#4e79a7" },
  { key: "device_to_device", label: "Device to device", color: "#76b7b2" },
  { key: "device_collectives", label: "Device collectives", color: "#b07aa1" },
  { key: "host_compute", label: "Host compute", color: "#59a14f" },
  { key: "kernel_launch", label: "Kernel launch", color: "#edc948" },
  { key: "input", label: "Input", color: "#e15759" },
  { key: "output", label: "Output", color: "#ff9da7" },
  { key: "compile", label: "Compilation", color: "#9c755f" },
  { key: "all_others", label: "All others", color: "#bab0ac" },
];

/**
 * The host each bar of an all-hosts step chart comes from: the backend's
 * `step_time_graph.host` (one per step), else the host of the same step in the steps table
 * (when the step's name is on one host only). Null when every step is on the same host.
 */
export function stepHosts(graph: StepGraph, stepsTable: TableData | undefined): (string | null)[] | null {
  const steps = (graph.step ?? []).map(String);
  let hosts: (string | null)[] = (graph.host ?? []).map(String);
  if (hosts.length !== steps.length && stepsTable) {
    const si = stepsTable.columns.findIndex((c) => c.name === "step");
    const hi = stepsTable.columns.findIndex((c) => c.name === "host");
    const byStep = new Map<string, string | null>();
    if (si >= 0 && hi >= 0) {
      for (const row of stepsTable.rows) {
        const step = row[si];
        const host = row[hi];
        if (typeof step !== "string" || typeof host !== "string") continue;
        const seen = byStep.get(step);
        byStep.set(step, seen === undefined || seen === host ? host : null); // null: the name is on several hosts
      }
    }
    hosts = steps.map((st) => byStep.get(st) ?? null);
  }
  if (hosts.length !== steps.length) return null;
  const distinct = new Set(hosts.filter((x) => x !== null));
  return distinct.size > 1 ? hosts : null;
}

/**
 * Host names as short as they stay distinct: a Kineto rank's host is "rank1.1795675218821096345"
 * (the rank, then a process id), and "rank1" names it on an axis label.
 */
export function shortHostNames(hosts: readonly (string | null)[]): (string | null)[] {
  const heads = hosts.map((x) => (x === null ? null : x.split(".")[0] ?? x));
  const full = new Set(hosts.filter((x) => x !== null));
  const short = new Set(heads.filter((x) => x !== null));
  return short.size === full.size ? heads : [...hosts];
}

const LEGEND_ROW_PX = 22;
// A legend item: the 25 px symbol and gap, then about 7 px per 12 px character.
const LEGEND_ITEM_PX = 35;
const LEGEND_CHAR_PX = 7;

/** Rows a plain legend of these labels takes in a chart `widthPx` wide (at least 1). */
export function legendRowCount(labels: readonly string[], widthPx: number): number {
  if (widthPx <= 0) return 1;
  let rows = 1;
  let used = 0;
  for (const l of labels) {
    const w = LEGEND_ITEM_PX + LEGEND_CHAR_PX * l.length;
    if (used > 0 && used + w > widthPx - 20) {
      rows++;
      used = 0;
    }
    used += w;
  }
  return rows;
}

/** The per-step stacked bar chart of step_time_graph (categories that are all zero are left out). */
export function stepTimeChart(chart: Chart, graph: StepGraph, categories: readonly Category[] = STEP_CATEGORIES,
  hosts: readonly (string | null)[] | null = null): void {
  // All hosts: each bar says which host it comes from, on a second label line.
  const short = hosts ? shortHostNames(hosts) : null;
  const steps = (graph.step ?? []).map(String).map((st, i) => (short?.[i] ? `${st}\n${short[i] ?? ""}` : st));
  // Every bar labelled: each label gets its bar's slot and is cut to it (the tooltip names it whole).
  const slotPx = Math.max(32, (chart.el.clientWidth - 64) / Math.max(1, steps.length) - 6);
  const series = categories
    .map((c) => ({ c, values: (graph[`${c.key}_ms`] ?? []).map((v) => (typeof v === "number" ? v : 0)) }))
    .filter((s) => s.values.some((v) => v > 0));
  const legendRows = legendRowCount(series.map((x) => x.c.label), chart.el.clientWidth);
  chart.setOption({
    grid: { left: 8, right: 16, top: 14 + LEGEND_ROW_PX * legendRows, bottom: 8, containLabel: true },
    // Every category named: the legend wraps to as many rows as it needs (a paged legend hid half).
    legend: { top: 0, type: "plain", itemGap: 10 },
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: unitFormatter("ms") },
    xAxis: { type: "category", data: steps, axisLabel: { interval: 0, width: slotPx, overflow: "truncate", lineHeight: 14 } },
    yAxis: { type: "value", axisLabel: { formatter: axisLabel("ms") } },
    series: series.map((s) => ({
      type: "bar",
      name: s.c.label,
      stack: "step",
      itemStyle: { color: s.c.color },
      data: s.values,
      barMaxWidth: 48,
    })),
  });
}

/** avg ± stddev of a {avg, stddev, min, max} object, in ms ("–" without values: no steps). */
export function statText(stat: Stat): string {
  return stat.avg === null ? "–" : meanAndSpread(stat.avg, stat.stddev);
}

// Milliseconds per unit, largest first.
const TIME_UNITS: readonly (readonly [string, number])[] = [["s", 1000], ["ms", 1], ["µs", 1e-3], ["ns", 1e-6]];

/**
 * "5.9 µs ± 0.018": the mean in the unit that keeps it ≥ 1 (3 significant digits), the standard
 * deviation in the same unit (2 significant digits): "0.0059 ms ± 0.000018" would make the
 * reader count zeros.
 */
export function meanAndSpread(avgMs: number, sdMs: number | null): string {
  const [unit, perUnitMs] = TIME_UNITS.find(([, ms]) => Math.abs(avgMs) >= ms) ?? (avgMs === 0 ? ["ms", 1] : ["ns", 1e-6]);
  const mean = formatNumber(avgMs / perUnitMs, 3);
  if (sdMs === null) return `${mean} ${unit}`;
  return `${mean} ${unit} ± ${formatNumber(sdMs / perUnitMs, 2)}`;
}

/** A small static table: category, avg, stddev, min, max (non-zero rows only). */
export function breakdownStatsTable(breakdown: Readonly<Record<string, Stat>>, categories: readonly Category[] = STEP_CATEGORIES): HTMLElement {
  const rows = categories
    .map((c) => ({ c, s: breakdown[`${c.key}_ms`] }))
    .filter((r): r is { c: Category; s: Stat } => r.s !== undefined && (r.s.max ?? 0) > 0);
  const cell = (v: number | null): HTMLElement => h("td", { class: "tbp-num" }, v === null ? "–" : formatNumber(v));
  return h(
    "table",
    { class: "tbp-table tbp-static-table" },
    h("thead", {}, h("tr", {}, h("th", {}, "Category"), ...["avg (ms)", "stddev (ms)", "min (ms)", "max (ms)"].map((t) => h("th", { class: "tbp-num" }, t)))),
    h(
      "tbody",
      {},
      rows.map(({ c, s }) =>
        h(
          "tr",
          {},
          h("td", {}, h("span", { class: "tbp-swatch", style: `background:${c.color}` }), c.label),
          cell(s.avg),
          cell(s.stddev),
          cell(s.min),
          cell(s.max),
        ),
      ),
    ),
  );
}

/** Errors and warnings of a result's `diagnostics` (and why there are no steps) as message boxes. */
export function diagnosticsBoxes(d: Diagnostics, steps: StepsInfo | null): HTMLElement[] {
  const out: HTMLElement[] = [];
  const errors = d.errors;
  const warnings = d.warnings;
  if (errors.length) out.push(messageBox({ kind: "error", title: "Errors", body: h("ul", {}, errors.map((e) => h("li", {}, e))) }));
  const diagnosis = steps?.diagnosis ?? "";
  // A warning that only repeats why there are no steps: the "Steps" box says it once.
  const others = warnings.filter((w) => !diagnosis || !w.endsWith(diagnosis));
  if (others.length) out.push(messageBox({ title: "Warnings", body: h("ul", {}, others.map((e) => h("li", {}, e))) }));
  if (diagnosis) out.push(messageBox({ title: "Steps", body: diagnosis }));
  return out;
}

/** "8 steps (step markers)" from a result's `steps` block. */
/** What the backend's `step_confidence` means, in one line (docs/formulas.md "Step inference"). */
const CONFIDENCE_TEXT: Readonly<Record<string, string>> = {
  markers: "Step confidence: markers (the program marked its steps)",
  annotated: "Step confidence: annotated (numbered step events without XProf's root flag)",
  inferred: "Step confidence: inferred (a repeated unit of similar durations covering most of the busy time)",
  none: "Step confidence: none (no step; no input-bound verdict)",
};

/** The visible step-confidence line of a `steps` object ("" when the backend sent none). */
export function stepConfidenceText(steps: Pick<StepsInfo, "step_confidence">): string {
  const c = steps.step_confidence;
  return c ? (CONFIDENCE_TEXT[c] ?? `Step confidence: ${c}`) : "";
}

export function stepsText(steps: Pick<StepsInfo, "step_count" | "step_source">): string {
  const n = steps.step_count;
  const source = steps.step_source;
  return `${formatNumber(n)}${source ? ` (${source.replace(/_/g, " ")})` : ""}`;
}
