// HTA's GPU breakdowns (the backend's gpu_breakdown tool) as a section of the pod viewer page of
// runs that have device events: per rank, how much of the device timeline is idle, computing or
// doing other work, why it is idle, how much communication overlaps with computation, and device
// time by kernel type. (The overview shows HTA's two shares in its definitions panel,
// overview/idle_panel.ts.)

import { formatDuration, formatPercent } from "../../base/format";
import type { CellValue, TableData, ToolResult } from "../../data/types";
import { type Card, cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import type { PageContext } from "../context";
import { metricCard, metricsOf } from "../metrics";

export const GPU_BREAKDOWN_TOOL = "gpu_breakdown";

function cell(value: CellValue, unit: string): string {
  if (value === null) return "–";
  if (typeof value !== "number") return String(value);
  if (unit === "%") return formatPercent(value);
  if (unit === "us") return formatDuration(value, "us");
  return String(Math.round(value * 1000) / 1000);
}

/** A small static table (a handful of rows per rank): every column of the backend table. */
export function staticTable(t: TableData, title: string, id: string, skip: readonly string[] = ["host"]): HTMLElement {
  const cols = t.columns.map((c, i) => ({ c, i })).filter(({ c }) => !skip.includes(c.name));
  return h(
    "section",
    { class: "tbp-section", "data-gpu-table": id },
    h("h3", {}, title),
    h(
      "table",
      { class: "tbp-static-table" },
      h("thead", {}, h("tr", {}, cols.map(({ c }) => h("th", { title: c.description }, c.label + (c.unit && c.unit !== "%" && c.unit !== "us" ? ` (${c.unit})` : ""))))),
      h(
        "tbody",
        {},
        t.rows.map((r) => h("tr", {}, cols.map(({ c, i }) => h("td", {}, cell(r[i] ?? null, c.unit))))),
      ),
    ),
  );
}

/** The tables of HTA's report with their titles, in reading order. */
export const SECTION_TABLES: readonly (readonly [string, string])[] = [
  ["temporal_breakdown", "Temporal breakdown per rank"],
  ["idle_time_breakdown", "Idle time by cause (host wait: the CPU launched late; kernel wait: launch gaps under the threshold)"],
  ["comm_comp_overlap", "Communication overlapped by computation"],
  ["kernel_type_breakdown", "Device time by kernel type (all ranks)"],
  ["kernel_launch_summary", "Kernel launch summary per GPU"],
];

/** The headline cards: HTA's idle and communication shares (pages/metrics.ts). */
export function gpuBreakdownCards(result: ToolResult): HTMLElement {
  const metrics = metricsOf(result.raw);
  const idleMetric = metrics.get("device_idle_of_kernel_timeline");
  const commMetric = metrics.get("communication_of_kernel_timeline");
  const idle = idleMetric?.valuePercent ?? null;
  const cards: Card[] = [];
  if (idleMetric) cards.push(metricCard(idleMetric, { id: "device_idle", tone: idle === null ? "neutral" : idle > 50 ? "bad" : idle > 20 ? "warn" : "good" }));
  if (commMetric && commMetric.valuePercent !== null) cards.push(metricCard(commMetric, { id: "communication" }));
  return cardRow(cards);
}

/** The section for a loaded gpu_breakdown result. */
export function gpuBreakdownView(result: ToolResult): HTMLElement {
  const box = h(
    "section",
    { class: "tbp-section", "data-section": "gpu_breakdown" },
    h("h2", {}, "GPU time breakdown (HTA)"),
    gpuBreakdownCards(result),
  );
  for (const [name, title] of SECTION_TABLES) {
    const t = result.tables[name];
    if (t && t.rows.length) box.appendChild(staticTable(t, title, name));
  }
  return box;
}

/**
 * Appends the section to `into` when the run has the tool: fetched after the page is drawn, so
 * the page never waits for it; a failure shows a message in place of the section.
 */
export function appendGpuBreakdown(ctx: PageContext, into: HTMLElement): void {
  if (!ctx.run.tools.includes(GPU_BREAKDOWN_TOOL)) return;
  const holder = h("div", { "data-gpu-breakdown": "loading" });
  into.appendChild(holder);
  const host = ctx.run.hosts.length > 1 ? ctx.allHosts : (ctx.request.host ?? ctx.run.hosts[0] ?? null);
  ctx.api
    .data({ run: ctx.request.run, host, tool: GPU_BREAKDOWN_TOOL, options: {} }, 50, ctx.signal)
    .then((result) => {
      holder.replaceChildren(gpuBreakdownView(result));
      holder.setAttribute("data-gpu-breakdown", "ready");
    })
    .catch((e: unknown) => {
      if (ctx.signal.aborted) return;
      holder.replaceChildren(messageBox({ title: "GPU breakdown unavailable", body: e instanceof Error ? e.message : String(e) }));
      holder.setAttribute("data-gpu-breakdown", "error");
    });
}
