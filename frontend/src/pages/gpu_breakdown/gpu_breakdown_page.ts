// The GPU breakdown page (HTA's report): the headline metrics as cards, per GPU a stacked bar of
// idle / compute / non-compute time and the device time by kernel type as charts, then each
// table as a full table widget (sortable, filterable, CSV), titled as in the overview's section.

import type { GpuBreakdownResult } from "../../data/schema.gen";
import type { TableData } from "../../data/types";
import { axisLabel, unitFormatter } from "../../widgets/chart";
import { h } from "../../widgets/dom";
import { chart, pageTitle, panel, pieChart, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import { gpuBreakdownCards, SECTION_TABLES } from "./gpu_breakdown_section";
import { legendRowCount } from "../steps_common";

const TEMPORAL_PARTS: readonly (readonly [string, string, string])[] = [
  ["compute_time_us", "Compute", "#4e79a7"],
  ["non_compute_time_us", "Non-compute (memory, communication)", "#f28e2b"],
  ["idle_time_us", "Idle", "#bab0ac"],
];

function text(v: unknown): string {
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : "";
}

function column(t: TableData, name: string): unknown[] {
  const i = t.columns.findIndex((c) => c.name === name);
  return i < 0 ? [] : t.rows.map((r) => r[i] ?? null);
}

/** "GPU:0" on one rank (a JAX or single-process run has no ranks to tell apart), else "rank 1 · GPU:0". */
function deviceLabels(t: TableData, oneRank: boolean): string[] {
  const ranks = column(t, "rank");
  return column(t, "device").map((d, i) => {
    const dev = text(d).replace(/^\/device:/, "");
    return oneRank ? dev : `rank ${text(ranks[i])} · ${dev}`;
  });
}

function render(ctx: PageContext<GpuBreakdownResult>): void {
  const result = ctx.result;
  if (!result) return;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "GPU breakdown (HTA)"));
  el.appendChild(gpuBreakdownCards(result));
  const oneRank = new Set(result.raw.ranks).size <= 1;
  const grid = h("div", { class: "tbp-grid-2" });
  const temporal = result.tables.temporal_breakdown;
  if (temporal && temporal.rows.length) {
    el.appendChild(grid);
    const box = panel(grid, "Time per GPU: compute, non-compute, idle");
    const labels = deviceLabels(temporal, oneRank);
    const c = chart(ctx, box, { label: "Time per GPU: compute, non-compute and idle", id: "gpu_temporal", height: 300 });
    c.setOption({
      grid: { left: 8, right: 16, top: 14 + 22 * legendRowCount(TEMPORAL_PARTS.map(([, name]) => name), c.el.clientWidth), bottom: 8, containLabel: true },
      legend: { top: 0, type: "plain", itemGap: 10 },
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: unitFormatter("us") },
      xAxis: { type: "category", data: labels, axisLabel: { interval: 0, width: 140, overflow: "break" } },
      yAxis: { type: "value", axisLabel: { formatter: axisLabel("us") } },
      series: TEMPORAL_PARTS.map(([key, name, color]) => ({
        type: "bar", name, stack: "t", itemStyle: { color }, barMaxWidth: 64,
        data: column(temporal, key).map((v) => (typeof v === "number" ? v : 0)),
      })),
    });
  }
  const types = result.tables.kernel_type_breakdown;
  if (types && types.rows.length) {
    if (!grid.isConnected) el.appendChild(grid);
    const box = panel(grid, "Device time by kernel type");
    const names = column(types, "kernel_type");
    const slices = column(types, "time_us").map((v, i) => ({ name: text(names[i]), value: typeof v === "number" ? v : 0 }));
    pieChart(ctx, box, { label: "Device time by kernel type", id: "gpu_kernel_types", height: 300 }, slices, "us", { measure: "device time", kind: "kernel type" });
  }
  const titled = new Map<string, string>([...SECTION_TABLES.map(([n, t]) => [n, t] as const),
    ["kernel_launches", "Every kernel launch: CPU time, device time, launch delay"], ["top_kernels", "Top kernels by kind"]]);
  const names = [...titled.keys(), ...Object.keys(result.tables).filter((n) => !titled.has(n))];
  for (const name of names) {
    if (!result.tables[name]) continue;
    const title = titled.get(name);
    // One rank (JAX, a single process): a "rank 0" column says nothing.
    el.appendChild(tableWidget(ctx, name, { ...(title !== undefined ? { title } : {}), defaultHidden: oneRank ? ["rank"] : [] }).el);
  }
}

export const gpuBreakdownPage: PageSpec<GpuBreakdownResult> = { render };
