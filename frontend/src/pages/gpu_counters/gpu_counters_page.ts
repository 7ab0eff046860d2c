// GPU queue length and memory bandwidth (HTA's counters): the series drawn as charts, one line
// per rank and stream (queue length) or per rank and memory kind (bandwidth), decimated to the
// chart's width as HTA's notebooks and torch-tb-profiler plot them; the summaries as tables.
// The series' rows stay reachable as tables and CSV below the charts.

import type { GpuCountersResult } from "../../data/schema.gen";
import { formatNumber, formatWithUnit } from "../../base/format";
import type { TableData } from "../../data/types";
import { axisLabel, PALETTE, unitFormatter } from "../../widgets/chart";
import { type Card, cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { chart, pageTitle, panel, tableWidget } from "../common";
import { legendRowCount } from "../steps_common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import { decimate, type Series } from "./decimate";

interface SeriesSpec {
  table: string;
  title: string;
  /** Columns that name a line ("rank", "stream"), the x column and the y column. */
  keys: readonly string[];
  y: string;
  unit: string;
  step: boolean;
}

const SERIES: readonly SeriesSpec[] = [
  { table: "queue_length_series", title: "Queue length over time (kernels waiting on a stream)", keys: ["rank", "stream"], y: "queue_length", unit: "", step: true },
  { table: "memory_bw_series", title: "Memory bandwidth over time", keys: ["rank", "memory_kind"], y: "memory_bw_gibps", unit: "GiB/s", step: false },
];

function lines(t: TableData, spec: SeriesSpec): Map<string, Series> {
  const col = (name: string): number => t.columns.findIndex((c) => c.name === name);
  const keyCols = spec.keys.map(col);
  const x = col("time_us");
  const y = col(spec.y);
  const out = new Map<string, Series>();
  for (const row of t.rows) {
    const xv = row[x];
    const yv = row[y];
    if (typeof xv !== "number" || typeof yv !== "number") continue;
    const name = spec.keys.map((k, i) => `${k === "rank" ? "rank " : k === "stream" ? "stream " : ""}${String(row[keyCols[i] ?? -1] ?? "")}`).join(" · ");
    let s = out.get(name);
    if (!s) out.set(name, (s = []));
    s.push([xv, yv]);
  }
  for (const s of out.values()) s.sort((a, b) => a[0] - b[0]);
  return out;
}

function drawSeries(ctx: PageContext, into: HTMLElement, spec: SeriesSpec, total: number): void {
  const box = panel(into, spec.title);
  box.setAttribute("data-series", spec.table);
  const c = chart(ctx, box, { label: spec.title, id: spec.table, height: 280 });
  ctx.api
    .table(ctx.request, spec.table, { sort: null, desc: null, filters: {}, offset: 0, limit: total }, ctx.signal)
    .then((t) => {
      const buckets = Math.max(100, Math.floor(c.el.clientWidth));
      const named = [...lines(t, spec)];
      const points = named.reduce((n, [, s]) => n + s.length, 0);
      c.setOption({
        color: PALETTE,
        grid: { left: 8, right: 24, top: 14 + 22 * legendRowCount(named.map(([name]) => name), c.el.clientWidth), bottom: 8, containLabel: true },
        legend: { top: 0, type: "plain", itemGap: 10 },
        tooltip: { trigger: "axis", valueFormatter: unitFormatter(spec.unit), confine: true },
        // Time since the profile's start; the labels carry the unit.
        xAxis: { type: "value", axisLabel: { formatter: axisLabel("us"), hideOverlap: true }, min: "dataMin", max: "dataMax" },
        // Queue lengths and bandwidths are never negative: the axis starts at 0.
        yAxis: { type: "value", min: 0, axisLabel: { formatter: spec.unit ? axisLabel(spec.unit) : (v: number) => formatNumber(v) } },
        series: named.map(([name, s]) => ({ type: "line", name, step: spec.step ? "end" : false, showSymbol: false, data: decimate(s, buckets), sampling: "none" })),
      });
      box.appendChild(h("p", { class: "tbp-note", "data-series-points": String(points) },
        `${formatNumber(points)} samples in ${formatNumber(named.length)} lines, drawn at the chart's width (each pixel keeps its lowest and highest sample).`));
    })
    .catch((e: unknown) => {
      if (ctx.signal.aborted) return;
      box.appendChild(h("p", { class: "tbp-note" }, `The series could not be loaded: ${e instanceof Error ? e.message : String(e)}`));
    });
}

function render(ctx: PageContext<GpuCountersResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "GPU queue length & memory bandwidth (HTA)"));
  const cards: Card[] = [
    { id: "max_queue_length", label: "Max queue length", value: raw.max_queue_length === null ? "–" : formatNumber(raw.max_queue_length), hint: "kernels queued on one stream at once, any rank" },
    { id: "peak_memory_bw", label: "Peak memory bandwidth", value: raw.peak_memory_bw_gibps === null ? "–" : formatWithUnit(raw.peak_memory_bw_gibps, "GiB/s"), hint: "of memory copies and sets, any rank" },
  ];
  el.appendChild(cardRow(cards));
  const grid = h("div", { class: "tbp-grid-2" });
  el.appendChild(grid);
  for (const spec of SERIES) {
    const t = result.tables[spec.table];
    if (t && t.totalRows > 0) drawSeries(ctx, grid, spec, t.totalRows);
  }
  const seriesTables = new Set(SERIES.map((s) => s.table));
  for (const name of Object.keys(result.tables)) {
    if (!seriesTables.has(name)) el.appendChild(tableWidget(ctx, name).el);
  }
  const details = h("details", { class: "tbp-section" }, h("summary", {}, "The series as tables"));
  for (const name of seriesTables) if (result.tables[name]) details.appendChild(tableWidget(ctx, name).el);
  el.appendChild(details);
}

export const gpuCountersPage: PageSpec<GpuCountersResult> = { render, rows: 50 };
