// The critical path page (HTA's critical_path_analysis): the path's length and its breakdown by
// bound (a stacked bar and a table), a link that opens the trace viewer with the path drawn over
// it, and the path's edges in order, each linking to its event in the trace viewer.

import { serializeState } from "../../base/url_state";
import { formatDuration, formatPercent } from "../../base/format";
import type { CellValue, TableData } from "../../data/types";
import { type Card, cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { pageTitle } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import type { CriticalPathResult } from "../../data/schema.gen";
import { staticTable } from "../gpu_breakdown/gpu_breakdown_section";

export const CRITICAL_PATH_TOOL = "critical_path";

/** Colours of HTA's bounds (the bar and the table's swatches). */
export const BOUND_COLORS: Readonly<Record<string, string>> = {
  cpu_bound: "#4e79a7",
  gpu_compute_bound: "#59a14f",
  gpu_communication_bound: "#b07aa1",
  gpu_kernel_kernel_overhead: "#f28e2b",
  gpu_kernel_launch_overhead: "#e15759",
};

function column(t: TableData, name: string): CellValue[] {
  const i = t.columns.findIndex((c) => c.name === name);
  return i < 0 ? [] : t.rows.map((r) => r[i] ?? null);
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

function str(v: unknown): string {
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : "";
}

/** The trace viewer's URL state that draws this result's path (the page's options as c.cp_*). */
export function overlayParams(raw: CriticalPathResult): Map<string, string> {
  const p = new Map<string, string>([
    ["c.overlay", "critical_path"],
    ["c.cp_annotation", str(raw.annotation)],
    ["c.cp_instance", str(raw.instance)],
  ]);
  if (raw.times === "us") p.set("c.cp_times", "us");
  if (raw.hta_compat) p.set("c.cp_hta_compat", "true");
  const start = num(raw.window_start_ps);
  const end = num(raw.window_end_ps);
  if (end > start) {
    const pad = (end - start) * 0.02;
    p.set("c.start", String(Math.round(start - pad)));
    p.set("c.end", String(Math.round(end + pad)));
  }
  return p;
}

/** A hash link to the trace viewer of the result's host, with the overlay and extra state. */
export function traceViewerHref(run: string, raw: CriticalPathResult, extra: Readonly<Record<string, string>> = {}): string {
  const state = new Map<string, string>([["run", run], ["tool", "trace_viewer"]]);
  const host = str(raw.host);
  if (host) state.set("host", host);
  for (const [k, v] of overlayParams(raw)) state.set(k, v);
  for (const [k, v] of Object.entries(extra)) state.set(k, v);
  return `#${serializeState(state)}`;
}

function breakdownBar(t: TableData): HTMLElement {
  const bounds = column(t, "bound_by").map(str);
  const pct = column(t, "percent").map(num);
  const bar = h("div", { class: "tbp-cp-bar", role: "img", "aria-label": "Critical path by bound", "data-cp-bar": "" });
  bar.style.display = "flex";
  bar.style.height = "22px";
  bar.style.borderRadius = "3px";
  bar.style.overflow = "hidden";
  bounds.forEach((b, i) => {
    const seg = h("div", { title: `${b}: ${formatPercent(pct[i] ?? 0)}`, "data-bound": b });
    seg.style.width = `${Math.max(pct[i] ?? 0, 0)}%`;
    seg.style.background = BOUND_COLORS[b] ?? "#bab0ac";
    bar.appendChild(seg);
  });
  const legend = h("div", { class: "tbp-muted" }, ...bounds.map((b, i) => {
    const sw = h("span", {}, "■ ");
    sw.style.color = BOUND_COLORS[b] ?? "#bab0ac";
    return h("span", { style: "margin-right:1em" }, sw, `${b} ${formatPercent(pct[i] ?? 0)}`);
  }));
  return h("div", {}, bar, legend);
}

function pathTable(ctx: PageContext<CriticalPathResult>, t: TableData, raw: CriticalPathResult): HTMLElement {
  // From/to events are in the CSV and the table API; the page keeps the row narrow.
  const cols = ["order", "type", "bound_by", "duration_us", "event", "start_us"];
  const idx = cols.map((c) => t.columns.findIndex((x) => x.name === c));
  const plane = t.columns.findIndex((c) => c.name === "plane");
  const row = t.columns.findIndex((c) => c.name === "row");
  const start = t.columns.findIndex((c) => c.name === "start_us");
  const end = t.columns.findIndex((c) => c.name === "end_us");
  const head = h("tr", {}, ...cols.map((c, k) => h("th", {}, t.columns[idx[k] ?? -1]?.label ?? c)), h("th", {}, "Trace"));
  const body = t.rows.map((r) => {
    const cells = idx.map((i, k) => {
      const v = i >= 0 ? (r[i] ?? null) : null;
      const name = cols[k] ?? "";
      return h("td", {}, typeof v === "number" && name.endsWith("_us") ? formatDuration(v, "us") : str(v));
    });
    const s = num(start >= 0 ? r[start] : null) * 1e6;
    const e = num(end >= 0 ? r[end] : null) * 1e6;
    const span = Math.max(e - s, 1e6);
    const href = traceViewerHref(ctx.request.run, raw, {
      "c.sel": `${str(plane >= 0 ? r[plane] : "")}:${str(row >= 0 ? r[row] : "")}`,
      "c.start": String(Math.round(s - 4 * span)),
      "c.end": String(Math.round(e + 4 * span)),
    });
    const link = h("a", { class: "tbp-link", href, "data-cp-event-link": str(r[idx[0] ?? 0] ?? "") }, "open");
    return h("tr", {}, ...cells, h("td", {}, link));
  });
  return h("table", { class: "tbp-static-table", "data-cp-path": "" }, h("thead", {}, head), h("tbody", {}, ...body));
}

function render(ctx: PageContext<CriticalPathResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  ctx.el.appendChild(pageTitle(ctx, "Critical path (HTA)"));
  const breakdown = result.tables.breakdown;
  const path = result.tables.path;
  const cards: Card[] = [
    { label: "Critical path", value: formatDuration(num(raw.total_us), "us"), id: "cp_length", hint: `${str(raw.step_name)} · rank ${str(raw.rank)}` },
    { label: "Path", value: `${num(raw.path_events)} events`, id: "cp_events", hint: `${num(raw.path_edges)} edges of ${num(raw.edges)}` },
  ];
  ctx.el.appendChild(pickers(ctx, raw));
  ctx.el.appendChild(cardRow(cards));
  ctx.el.appendChild(meaning(raw));
  if (!breakdown || !path || path.rows.length === 0) {
    ctx.el.appendChild(messageBox({ title: "No critical path", body: "The annotation's window holds no operators or kernels." }));
    return;
  }
  const open = h("a", { class: "tbp-link", href: traceViewerHref(ctx.request.run, raw), "data-cp-trace-link": "" },
    "Show the path in the trace viewer");
  ctx.el.appendChild(h("section", { class: "tbp-section", "data-section": "critical_path_breakdown" },
    h("h2", {}, "Breakdown by bound"), breakdownBar(breakdown), staticTable(breakdown, "", "cp_breakdown", []), h("p", {}, open)));
  ctx.el.appendChild(h("section", { class: "tbp-section", "data-section": "critical_path_events" },
    h("h2", {}, `The path, edge by edge (${path.rows.length}${path.totalRows > path.rows.length ? ` of ${path.totalRows}` : ""})`),
    pathTable(ctx, path, raw)));
}

/** Rank and step as pickers of the values the run has (the options bar's raw fields read "rank -1"). */
function pickers(ctx: PageContext<CriticalPathResult>, raw: CriticalPathResult): HTMLElement {
  const rankSelect = h("select", { "data-pick": "cp-rank", "aria-label": "Rank" },
    raw.ranks.map((r, i) => h("option", { value: String(r), selected: r === raw.rank }, `rank ${r}${raw.hosts[i] ? ` (${raw.hosts[i]})` : ""}`)));
  rankSelect.addEventListener("change", () => ctx.setOptions({ rank: rankSelect.value }));
  const stepSelect = h("select", { "data-pick": "cp-instance", "aria-label": "Step" },
    raw.instances.map((name, i) => h("option", { value: String(i), selected: i === raw.instance }, name || `${raw.annotation} #${i}`)));
  stepSelect.addEventListener("change", () => ctx.setOptions({ instance: stepSelect.value, step: null }));
  return h("div", { class: "tbp-toolbar", "data-section": "cp_pickers" },
    h("label", {}, "Rank ", rankSelect),
    raw.instances.length ? h("label", {}, `${raw.annotation} `, stepSelect) : h("span", { class: "tbp-muted" }, `no "${raw.annotation}" event on this rank`));
}

// Shares of the path above which a bound decides what the text says.
const DOMINANT_SHARE_PERCENT = 50;

/**
 * What the path is and what its largest bound means. A path along the NCCL stream whose largest
 * share is "kernel-kernel overhead" is a rank waiting for other ranks: a collective kernel cannot
 * finish before every rank has joined it, so the gaps between collectives are the slowest
 * rank's lateness, not this GPU's launch overhead, even where this rank spends most of its step
 * in host compute.
 */
export function meaning(raw: CriticalPathResult): HTMLElement {
  const shares = raw.breakdown_percent;
  const comm = shares.gpu_communication_bound ?? 0;
  const gaps = shares.gpu_kernel_kernel_overhead ?? 0;
  const parts: string[] = [
    `The critical path is the longest chain of events in ${raw.step_name || "the window"} on rank ${raw.rank} where each waits for the one before it `
      + "(a launch for its operator, a kernel for the kernel before it on its stream, a synchronisation for what it waits on): "
      + "making an event on it shorter shortens the step; making an event off it shorter does not.",
  ];
  if (comm > 0 && comm + gaps >= DOMINANT_SHARE_PERCENT) {
    parts.push(`Here ${formatPercent(comm + gaps)} of it runs along collective (NCCL) kernels and the gaps between them. `
      + "A collective ends only when every rank has joined it, so those gaps are this rank waiting on another rank, "
      + "not launch overhead: the slowest rank sets the pace (see Stragglers and the other ranks' paths).");
  } else if ((shares.cpu_bound ?? 0) >= DOMINANT_SHARE_PERCENT) {
    parts.push("Most of it is host (CPU) operators: the GPU waits for the host to launch work.");
  } else if ((shares.gpu_compute_bound ?? 0) >= DOMINANT_SHARE_PERCENT) {
    parts.push("Most of it is GPU compute kernels: faster kernels shorten the step.");
  }
  return h("section", { class: "tbp-message", "data-section": "cp_meaning" }, h("h2", {}, "What this path means"), ...parts.map((t) => h("p", {}, t)));
}

export const criticalPathPage: PageSpec<CriticalPathResult> = { rows: 5000, render, hideOptions: ["rank", "instance", "step"] };
