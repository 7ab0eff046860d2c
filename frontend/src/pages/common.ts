// Building blocks every page uses: a table bound to the URL and the backend, a chart that
// is disposed with the page, cards for a result's scalar fields, a page title.

import { formatByKey, formatWithUnit, humanizeKey } from "../base/format";
import type { ToolResult } from "../data/types";
import { type Card, cardRow } from "../widgets/cards";
import { Chart, type ChartOptions, PALETTE, unitFormatter } from "../widgets/chart";
import { h } from "../widgets/dom";
import { DataTable, type DataTableOptions } from "../widgets/table";
import { hiddenFromParam, hiddenToParam } from "../widgets/table_columns";
import { viewFromParams, viewToUpdates } from "../widgets/table_model";
import type { PageContext } from "./context";

export const DEFAULT_PAGE_SIZE = 100;

/**
 * Tables read by their name, count and time (tool/table): shown with those columns first
 * (otherwise kernel stats would put the kernel's name second and its time 14th of 17 columns).
 */
const KEY_FIRST_TABLES = new Set([
  "kernel_stats/kernels", "framework_op_stats/ops", "tf1_op_stats/ops", "pytorch_op_stats/operators",
  "pytorch_kernel_stats/kernels",
]);
// Text columns shown whole, wrapped over lines: HTA's kernel sequences ("operator|kernel|kernel|...")
// differ only past the first kernel, so four cut rows read the same.
const WRAPPED_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  "kernel_sequences/patterns": ["pattern"],
};

export interface TableWidgetOptions {
  title?: string;
  description?: string;
  pageSize?: number;
  decorateCell?: (td: HTMLTableCellElement, row: readonly unknown[], column: number) => void;
  keyColumnsFirst?: boolean;
  /** Columns hidden until the user picks columns (the URL's t.<name>.hide wins). */
  defaultHidden?: readonly string[];
}

/** The column chooser's state of table `name` in the URL (t.<name>.hide). */
export function hiddenColumns(ctx: PageContext, name: string, defaultHidden: readonly string[] = []): Pick<DataTableOptions, "hidden" | "onHiddenChange"> {
  const param = ctx.tableParams(name).get("hide");
  return {
    hidden: param === undefined ? [...defaultHidden] : hiddenFromParam(param),
    onHiddenChange: (hidden) => ctx.setTableParams({ [`${name}.hide`]: hiddenToParam(hidden) }),
  };
}

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "");
}

/**
 * A kernel sequence ("operator|kernel|kernel|...", HTA's notation) as a reader follows it: each
 * kernel by its function name (template arguments and parameters dropped: "void
 * at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" is
 * "at::native::vectorized_elementwise_kernel"), one step per arrow. The whole text is the tooltip.
 */
export function sequenceText(pattern: string): string {
  return pattern.split("|").map((part, i) => {
    if (i === 0) return part;
    const name = part.replace(/^\s*void\s+/, "").replaceAll("(anonymous namespace)::", "");
    const cut = name.search(/[<(]/);
    return (cut > 0 ? name.slice(0, cut) : name).trim() || part;
  }).join(" → ");
}

/** The table `name` of ctx.result as a DataTable whose sort/filter/page live in the URL. */
export function tableWidget(ctx: PageContext, name: string, opts: TableWidgetOptions = {}): DataTable {
  const initial = ctx.result?.tables[name];
  if (!initial) throw new Error(`the ${ctx.request.tool} result has no table "${name}"`);
  let view = viewFromParams(ctx.tableParams(name));
  const host = ctx.request.host === ctx.allHosts ? "all_hosts" : (ctx.request.host ?? "");
  const widget = new DataTable({
    name,
    title: opts.title ?? humanizeKey(name),
    description: opts.description,
    initial,
    view,
    pageSize: opts.pageSize ?? DEFAULT_PAGE_SIZE,
    fetchRows: (q, signal) => ctx.api.table(ctx.request, name, q, signal),
    onViewChange: (next) => {
      ctx.setTableParams(viewToUpdates(`${name}.`, view, next));
      view = next;
    },
    csvName: safeName(`${ctx.run.name}_${host}_${ctx.request.tool}_${name}`),
    fullCsvUrl: (q) => ctx.api.csvUrl(ctx.request, name, q),
    decorateCell: opts.decorateCell,
    keyColumnsFirst: opts.keyColumnsFirst ?? KEY_FIRST_TABLES.has(`${ctx.request.tool}/${name}`),
    wrapColumns: WRAPPED_COLUMNS[`${ctx.request.tool}/${name}`] ?? [],
    ...hiddenColumns(ctx, name, opts.defaultHidden),
  });
  ctx.onDispose(() => widget.dispose());
  return widget;
}

/** A chart in `parent`, disposed when the page is left. */
export function chart(ctx: PageContext, parent: HTMLElement, opts: ChartOptions): Chart {
  const c = new Chart(parent, opts);
  ctx.onDispose(() => c.dispose());
  return c;
}

const HIDDEN_KEYS = new Set(["schema_version", "tool", "tables"]);

export function isScalar(v: unknown): v is string | number | boolean | null {
  return v === null || ["string", "number", "boolean"].includes(typeof v);
}

/** Cards for the result's top-level scalar fields, formatted by what their names say. */
export function scalarCards(result: ToolResult): HTMLElement | null {
  const cards: Card[] = [];
  for (const [k, v] of Object.entries(result.raw)) {
    if (HIDDEN_KEYS.has(k) || !isScalar(v)) continue;
    if (typeof v === "string" && v.length > 120) continue; // long text belongs in the details
    cards.push({ label: humanizeKey(k), value: formatByKey(k, v), id: k });
  }
  return cards.length ? cardRow(cards) : null;
}

/** Top-level fields that are neither scalars nor tables (shown as collapsible details). */
export function nestedFields(result: ToolResult): [string, unknown][] {
  return Object.entries(result.raw).filter(([k, v]) => !HIDDEN_KEYS.has(k) && !isScalar(v));
}

export function pageTitle(ctx: PageContext, fallback: string): HTMLElement {
  const title = ctx.tool?.title ?? fallback;
  const hostText = ctx.request.host === ctx.allHosts ? "all hosts" : (ctx.request.host ?? ctx.run.hosts[0] ?? "");
  return h(
    "div",
    { class: "tbp-page-title" },
    h("h1", {}, title),
    h("span", { class: "tbp-muted" }, `${ctx.run.name} · ${hostText}`),
  );
}

export interface Slice {
  name: string;
  value: number;
  /** A fixed colour (step categories keep theirs on every page). */
  color?: string;
}

/** Slices a pie shows: the largest `top` and one "Other (k)" for the rest; empty ones dropped. */
export function pieSlices(slices: readonly Slice[], top = 8): Slice[] {
  // The backend's own tail ("Other (12)") joins ours: one "Other (N)", not "Other" and "Other (3)".
  let otherValue = 0;
  let otherCount = 0;
  const named: Slice[] = [];
  for (const s of slices) {
    const m = OTHER_NAME.exec(s.name);
    if (m && s.value > 0) {
      otherValue += s.value;
      otherCount += m[1] !== undefined ? Number(m[1]) : 1;
    } else if (s.value > 0) {
      named.push(s);
    }
  }
  const sorted = named.sort((a, b) => b.value - a.value);
  // Never an "Other (1)": one more slice costs no more room than the "Other" would.
  const keep = sorted.length === top + 1 && otherCount === 0 ? top + 1 : top;
  const shown: Slice[] = sorted.slice(0, keep);
  const rest = sorted.slice(keep).reduce((a, s) => a + s.value, otherValue);
  if (rest > 0) shown.push({ name: `Other (${String(sorted.length - Math.min(keep, sorted.length) + otherCount)})`, value: rest, color: "#bab0ac" });
  return shown;
}

const OTHER_NAME = /^Other(?: \((\d+)\))?$/;

function firstDifference(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/**
 * Legend labels of at most `maxChars`: names cut in the middle, except where that makes two
 * labels the same ("ncclDevKern…orage<4096ul>)" four times): those show the part where
 * they differ from each other, with "…" on the sides cut away.
 */
export function legendLabels(names: readonly string[], maxChars: number): Map<string, string> {
  const plain = names.map((n) => middleEllipsis(n, maxChars));
  const out = new Map<string, string>();
  names.forEach((name, i) => {
    const twins = names.filter((other, j) => j !== i && plain[j] === plain[i] && other !== name);
    if (twins.length === 0) {
      out.set(name, plain[i] ?? name);
      return;
    }
    const diff = Math.min(...twins.map((t) => firstDifference(name, t)));
    const room = maxChars - 2;
    const start = Math.max(0, Math.min(diff - Math.floor(room * 0.3), name.length - room));
    const end = Math.min(name.length, start + room);
    out.set(name, `${start > 0 ? "…" : ""}${name.slice(start, end)}${end < name.length ? "…" : ""}`);
  });
  return out;
}

/** A long name cut in the middle, keeping its end (op names differ at the end: ".../fusion_12"). */
export function middleEllipsis(name: string, maxChars: number): string {
  if (name.length <= maxChars) return name;
  const tail = Math.ceil((maxChars - 1) * 0.55);
  return `${name.slice(0, maxChars - 1 - tail)}…${name.slice(name.length - tail)}`;
}

// The donut's outer radius (a fraction of half the chart's smaller side), its margin from the
// chart's left edge, the gap to the legend and the legend's symbol (px), and the width of one
// 11 px legend character (a generous average for an 11 px sans-serif font).
const DONUT_OUTER_RADIUS = 0.6;
const DONUT_MARGIN_PX = 8;
const LEGEND_GAP_PX = 16;
const LEGEND_SYMBOL_PX = 18;
const LEGEND_CHAR_PX = 6.6;

/** Where a pie chart's donut and legend go in a chart `widthPx` x `heightPx`. */
export interface PieLayout {
  centreXPx: number;
  radiusPx: number;
  legendLeftPx: number;
  /** Characters a legend name may have before it is cut in the middle. */
  legendChars: number;
}

/**
 * The donut at the chart's left edge and the legend right after it, so the legend gets every
 * pixel the donut leaves: a 486 x 300 panel (half the page at 1280 px) holds "COMPUTATION
 * overlapping COMMUNICATION" (37 characters) whole.
 */
export function pieLayout(widthPx: number, heightPx: number = widthPx): PieLayout {
  const side = Math.min(widthPx, heightPx > 0 ? heightPx : widthPx);
  const radiusPx = (DONUT_OUTER_RADIUS * Math.max(side, 0)) / 2;
  const centreXPx = DONUT_MARGIN_PX + radiusPx;
  const legendLeftPx = centreXPx + radiusPx + LEGEND_GAP_PX;
  const room = widthPx - legendLeftPx - LEGEND_SYMBOL_PX - DONUT_MARGIN_PX;
  return { centreXPx, radiusPx, legendLeftPx, legendChars: Math.max(16, Math.floor(room / LEGEND_CHAR_PX)) };
}

/**
 * A donut of the largest `top` slices plus "Other": the legend lists every slice
 * beside the donut (no paging) with long names cut in the middle and whole on hover, and
 * percentages sit inside the slices, so nothing is cut at 1280 px.
 */
export function pieOption(slices: readonly Slice[], unit: string, top = 8, layout?: PieLayout): Record<string, unknown> {
  const legendChars = layout?.legendChars ?? 26;
  const shown = pieSlices(slices, top);
  const labels = legendLabels(shown.map((s) => s.name), legendChars);
  return {
    color: PALETTE,
    tooltip: { trigger: "item", valueFormatter: unitFormatter(unit), confine: true },
    legend: {
      type: "plain", orient: "vertical", top: "middle", itemGap: 6, itemWidth: 12, itemHeight: 10,
      ...(layout ? { left: layout.legendLeftPx } : { right: 4 }),
      formatter: (name: string) => labels.get(name) ?? middleEllipsis(name, legendChars),
      tooltip: { show: true },
      textStyle: { fontSize: 11 },
    },
    series: [
      {
        type: "pie",
        radius: layout ? [layout.radiusPx * (30 / 66), layout.radiusPx] : ["30%", "66%"],
        center: layout ? [layout.centreXPx, "50%"] : ["28%", "50%"],
        data: shown.map((s) => (s.color ? { name: s.name, value: s.value, itemStyle: { color: s.color } } : { name: s.name, value: s.value })),
        // Percentages inside slices wide enough to carry one; the legend and tooltip name them all.
        minShowLabelAngle: 20,
        label: { position: "inside", formatter: "{d}%", fontSize: 10, color: "#fff" },
        labelLine: { show: false },
      },
    ],
  };
}

/**
 * A pie of `slices` in `parent`, or a sentence when there is nothing to compare: a donut
 * that is one 100 % ring says less than "all of it is X".
 */
export function pieChart(ctx: PageContext, parent: HTMLElement, opts: ChartOptions, slices: readonly Slice[], unit: string,
  what: { measure: string; kind: string }): Chart | null {
  const shown = pieSlices(slices);
  if (shown.length >= 2) {
    const c = chart(ctx, parent, opts);
    c.setOption(pieOption(slices, unit, 8, pieLayout(c.el.clientWidth, c.el.clientHeight || opts.height || 0)));
    return c;
  }
  const only = shown[0];
  parent.appendChild(h("p", { class: "tbp-pie-sentence", "data-pie-sentence": opts.id ?? "" }, only
    ? [`All of the ${what.measure} (${formatWithUnit(only.value, unit)}) is in one ${what.kind}: `, h("b", {}, only.name), "."]
    : `No ${what.measure} to break down by ${what.kind}.`));
  return null;
}

/** A titled box for a chart, appended to `parent`. */
export function panel(parent: HTMLElement, title: string): HTMLElement {
  const box = h("div", { class: "tbp-panel" }, h("h2", {}, title));
  parent.appendChild(box);
  return box;
}
