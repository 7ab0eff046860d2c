// Building blocks every page uses: a table bound to the URL and the backend, a chart that
// is disposed with the page, cards for a result's scalar fields, a page title.

import { formatByKey, humanizeKey } from "../base/format";
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
 * (issue 19: kernel stats put the kernel's name second and its time 14th of 17 columns).
 */
const KEY_FIRST_TABLES = new Set([
  "kernel_stats/kernels", "framework_op_stats/ops", "tf1_op_stats/ops", "pytorch_op_stats/operators",
  "pytorch_kernel_stats/kernels",
]);

export interface TableWidgetOptions {
  title?: string;
  description?: string;
  pageSize?: number;
  decorateCell?: (td: HTMLTableCellElement, row: readonly unknown[], column: number) => void;
  keyColumnsFirst?: boolean;
}

/** The column chooser's state of table `name` in the URL (t.<name>.hide). */
export function hiddenColumns(ctx: PageContext, name: string): Pick<DataTableOptions, "hidden" | "onHiddenChange"> {
  return {
    hidden: hiddenFromParam(ctx.tableParams(name).get("hide")),
    onHiddenChange: (hidden) => ctx.setTableParams({ [`${name}.hide`]: hiddenToParam(hidden) }),
  };
}

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "");
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
    ...hiddenColumns(ctx, name),
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
}

/** A pie of the largest `top` slices plus "Other" for the rest, tooltips in `unit`. */
export function pieOption(slices: readonly Slice[], unit: string, top = 10): Record<string, unknown> {
  const sorted = [...slices].filter((s) => s.value > 0).sort((a, b) => b.value - a.value);
  const shown: Slice[] = sorted.slice(0, top);
  const rest = sorted.slice(top).reduce((a, s) => a + s.value, 0);
  if (rest > 0) shown.push({ name: `Other (${sorted.length - top})`, value: rest });
  return {
    color: PALETTE,
    tooltip: { trigger: "item", valueFormatter: unitFormatter(unit), confine: true },
    legend: { type: "scroll", bottom: 0, textStyle: { width: 110, overflow: "truncate" } },
    series: [
      {
        type: "pie",
        radius: ["28%", "58%"],
        center: ["50%", "44%"],
        data: shown,
        // Labels only on slices wide enough to carry one; the legend and tooltip name the rest.
        minShowLabelAngle: 14,
        label: { formatter: "{d}%" },
        labelLine: { length: 6, length2: 6 },
      },
    ],
  };
}

/** A titled box for a chart, appended to `parent`. */
export function panel(parent: HTMLElement, title: string): HTMLElement {
  const box = h("div", { class: "tbp-panel" }, h("h2", {}, title));
  parent.appendChild(box);
  return box;
}
