// Memory profile: per allocator, the summary (peaks, capacity, fragmentation), the timeline
// (heap and stack stacked, free memory, fragmentation on a second axis; hovering a point
// shows the allocation event behind it) and the breakdown of memory in use at the peak.

import type { AllocatorSummary, MemoryProfileResult } from "../../data/schema.gen";
import { type HtmlValue, html, joinHtml, tooltipHtml } from "../../base/html";
import { byteAxis } from "../../base/byte_ticks";
import { formatBytes, formatDuration, formatNumber, formatPercent } from "../../base/format";
import type { CellValue, TableData } from "../../data/types";
import { type Card, cardRow } from "../../widgets/cards";
import { axisLabel } from "../../widgets/chart";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, panel, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import { operationLabel } from "./memory_labels";

function column(t: TableData, name: string): CellValue[] {
  const i = t.columns.findIndex((c) => c.name === name);
  return i < 0 ? [] : t.rows.map((r) => r[i] ?? null);
}

const asNum = (v: CellValue | undefined): number => (typeof v === "number" ? v : 0);

/**
 * What the capacity is depends on who wrote it: never a caching allocator's reservation called
 * the device's memory. Label and meaning are the backend's (memory_profile.CAPACITY_MEANING),
 * the same words compare uses.
 */
function capacityCard(a: AllocatorSummary, capacity: number | null): Card {
  const source = a.capacity_source;
  const label = a.capacity_label || "Capacity";
  const title = a.capacity_meaning || null;
  const value = capacity === null ? "–" : formatBytes(capacity);
  if (source === "reserved") return { id: "capacity", label, value, hint: "at the peak; not the device's memory", ...(title ? { title } : {}) };
  if (source === "peak") return { id: "capacity", label, value: "unknown", hint: "the profile records bytes in use only", ...(title ? { title } : {}) };
  return { id: "capacity", label, value, hint: "in use + free at the peak", ...(title ? { title } : {}) };
}

function render(ctx: PageContext<MemoryProfileResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Memory profile"));
  const ids = raw.memory_ids;
  const current = raw.memory_id;
  const a = current === null ? undefined : raw.allocators[current];
  if (ids.length === 0 || a === undefined) {
    el.appendChild(messageBox({ title: "No allocator events", body: "This host recorded no memory allocations." }));
    return;
  }
  const select = h("select", { class: "tbp-allocator-select", "aria-label": "Allocator" });
  for (const id of ids) {
    const opt = h("option", { value: id }, id);
    if (id === current) opt.selected = true;
    select.appendChild(opt);
  }
  select.addEventListener("change", () => ctx.setOptions({ memory_id: select.value }));
  el.appendChild(h("div", { class: "tbp-toolbar" }, h("label", { class: "tbp-field" }, h("span", {}, "Allocator"), select)));

  const capacity = a.memory_capacity_bytes;
  el.appendChild(
    cardRow([
      { id: "peak_heap", label: "Peak heap usage", value: formatBytes(a.peak_heap_bytes), hint: `at ${formatDuration(a.peak_time_ms, "ms")}, step ${a.peak_step_id}` },
      { id: "peak_in_use", label: "Peak memory in use", value: formatBytes(a.peak_bytes_in_use), hint: `lifetime peak ${formatBytes(a.peak_bytes_usage_lifetime)}` },
      capacityCard(a, capacity),
      { id: "fragmentation", label: "Fragmentation at peak", value: formatPercent((a.peak_fragmentation_fraction ?? 0) * 100) },
      { id: "allocations", label: "Allocations", value: formatNumber(a.num_allocations), hint: `${formatNumber(a.num_deallocations)} deallocations` },
    ]),
  );

  const timeline = result.tables.timeline;
  if (timeline && timeline.rows.length) {
    const box = panel(el, "Memory timeline");
    if (raw.timeline_is_downsampled === true) {
      box.appendChild(h("p", { class: "tbp-muted" }, `Down-sampled to ${formatNumber(timeline.rows.length)} points (the peak is always one of them); raise “max points” above for more.`));
    }
    const t = column(timeline, "time_ms").map(asNum);
    const heap = column(timeline, "heap_bytes").map(asNum);
    const stack = column(timeline, "stack_bytes").map(asNum);
    const free = column(timeline, "free_bytes").map(asNum);
    const frag = column(timeline, "fragmentation_fraction").map((v) => asNum(v) * 100);
    const details = ["activity", "operation", "requested_bytes", "allocation_bytes", "region_type", "data_type", "shape", "step_id"].map((n) => [n, column(timeline, n)] as const);
    const pairs = (ys: number[]): [number, number][] => ys.map((y, i) => [t[i] ?? 0, y]);
    const c = chart(ctx, box, { label: "Memory timeline", id: "memory_timeline", height: 360 });
    // The byte axis steps by a power of two (16, 32, 48 MiB); it follows the series shown.
    const stackTop = heap.map((v, i) => v + (stack[i] ?? 0));
    const maxOf = (ys: number[]): number => ys.reduce((m, y) => (y > m ? y : m), 0);
    const axisFor = (showFree: boolean): Record<string, unknown> => ({
      type: "value", ...byteAxis(Math.max(maxOf(stackTop), showFree ? maxOf(free) : 0)), axisLabel: { formatter: axisLabel("bytes") },
    });
    const HEAP = "#4e79a7";
    const STACK = "#f28e2b";
    const FREE = "#59a14f";
    const FRAG = "#b07aa1";
    c.setOption({
      color: [HEAP, STACK, FREE, FRAG],
      grid: { left: 8, right: 16, top: 40, bottom: 40, containLabel: true },
      legend: { top: 0, selected: { "Free memory": false } },
      dataZoom: [{ type: "inside" }, { type: "slider", height: 18, bottom: 6 }],
      tooltip: {
        trigger: "axis",
        confine: true,
        formatter: tooltipHtml((params: unknown) => {
          const first = Array.isArray(params) ? (params as { dataIndex?: number }[])[0] : undefined;
          const i = first?.dataIndex ?? -1;
          if (i < 0) return html``;
          const lines: HtmlValue[] = [
            html`<b>${formatDuration(t[i] ?? 0, "ms")}</b>`,
            `heap ${formatBytes(heap[i] ?? 0)}, stack ${formatBytes(stack[i] ?? 0)}, free ${formatBytes(free[i] ?? 0)}`,
            `fragmentation ${formatPercent(frag[i] ?? 0)}`,
          ];
          const get = (n: string): CellValue => details.find(([k]) => k === n)?.[1][i] ?? null;
          const activity = get("activity");
          if (typeof activity === "string" && activity) {
            const op = get("operation");
            lines.push(`${activity}${typeof op === "string" && op ? ` by ${op}` : ""}`);
            lines.push(`requested ${formatBytes(asNum(get("requested_bytes")))}, allocated ${formatBytes(asNum(get("allocation_bytes")))}`);
            const meta = ["region_type", "data_type", "shape"].map(get).filter((v) => typeof v === "string" && v && v !== "INVALID");
            if (meta.length) lines.push(meta.join(" · "));
          }
          return joinHtml(lines);
        }),
      },
      xAxis: { type: "value", axisLabel: { formatter: axisLabel("ms") }, min: "dataMin", max: "dataMax" },
      yAxis: [
        axisFor(false),
        { type: "value", max: 100, min: 0, interval: 20, axisLabel: { formatter: "{value}%" }, splitLine: { show: false } },
      ],
      series: [
        // Heap and stack are parts of the memory in use: stacked areas, each in its own colour.
        { type: "line", name: "Heap", stack: "mem", areaStyle: { color: HEAP, opacity: 0.55 }, lineStyle: { color: HEAP, width: 1 }, itemStyle: { color: HEAP }, showSymbol: false, step: "end", data: pairs(heap) },
        { type: "line", name: "Stack", stack: "mem", areaStyle: { color: STACK, opacity: 0.55 }, lineStyle: { color: STACK, width: 1 }, itemStyle: { color: STACK }, showSymbol: false, step: "end", data: pairs(stack) },
        // Every series its own colour, named here, so no two series share one.
        { type: "line", name: "Free memory", showSymbol: false, step: "end", lineStyle: { type: "dashed", color: FREE }, itemStyle: { color: FREE }, data: pairs(free) },
        { type: "line", name: "Fragmentation", yAxisIndex: 1, showSymbol: false, step: "end", lineStyle: { color: FRAG, width: 1.5 }, itemStyle: { color: FRAG }, data: pairs(frag) },
      ],
    });
    c.on("legendselectchanged", (e) => {
      const selected = (e as { selected?: Record<string, boolean> }).selected ?? {};
      c.echarts?.setOption({ yAxis: [axisFor(selected["Free memory"] === true), {}] });
    });
  }
  if (result.tables.breakdown) {
    const bd = result.tables.breakdown;
    // The backend's `label` column names unnamed allocations itself; older results have none.
    const opAt = bd.columns.some((col) => col.name === "label") ? -1 : bd.columns.findIndex((col) => col.name === "operation");
    const bytesAt = bd.columns.findIndex((col) => col.name === "allocation_bytes");
    const typeAt = bd.columns.findIndex((col) => col.name === "data_type");
    el.appendChild(tableWidget(ctx, "breakdown", {
      title: "Memory in use at the peak, by operation",
      decorateCell: (td, row, i) => {
        if (i === typeAt) {
          noDataType(td, row[i]);
          return;
        }
        if (i !== opAt) return;
        const label = operationLabel(row[i], row[bytesAt]);
        if (label === null) return;
        td.textContent = label;
        td.classList.add("tbp-muted");
        td.title = "The allocation carries no op name (common for JAX/XLA buffers); its size class groups it with similar ones.";
      },
    }).el);
  }
  const tl = result.tables.timeline;
  if (tl) {
    const typeAt = tl.columns.findIndex((col) => col.name === "data_type");
    el.appendChild(tableWidget(ctx, "timeline", {
      title: "Timeline events",
      decorateCell: (td, row, i) => {
        if (i === typeAt) noDataType(td, row[i]);
      },
    }).el);
  }
}

/** XProf's "INVALID" data type means none was recorded: "–", not a word that reads as an error. */
function noDataType(td: HTMLTableCellElement, value: unknown): void {
  if (value !== "INVALID" && value !== "") return;
  td.textContent = "–";
  td.classList.add("tbp-muted");
  td.title = "No data type recorded for this allocation (XProf writes INVALID; the CSV keeps it).";
}

// The whole timeline comes in the first response: it is the chart's data (max_points caps it).
export const memoryProfilePage: PageSpec<MemoryProfileResult> = { rows: 20000, hideOptions: ["memory_id"], render };
