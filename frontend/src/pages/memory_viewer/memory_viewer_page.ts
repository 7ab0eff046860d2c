// Memory viewer: one HLO module's buffer assignment in one memory space, as XProf's page — the
// memory-type and module pickers, the heap over program order (padded and unpadded), the
// buffers live at the peak by program order / size / padding, and the allocation timeline
// (where in each allocation every buffer lived, over the heap simulator's steps).

import type { MemoryViewerResult } from "../../data/schema.gen";
import { formatBytes, formatNumber, formatPercent } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { PALETTE } from "../../widgets/chart";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, panel, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import { bufferOrder, type BufferOrder, timelineRects } from "./memory_viewer_logic";

const MIB = 2 ** 20;
const SVG = "http://www.w3.org/2000/svg";
const ORDERS: readonly [BufferOrder, string][] = [["program", "Program order"], ["size", "By size"], ["padding", "By padding"]];

function select(label: string, cls: string, options: readonly [string, string][], current: string, onChange: (v: string) => void): HTMLElement {
  const el = h("select", { class: cls, "aria-label": label });
  for (const [value, text] of options) {
    const opt = h("option", { value }, text);
    if (value === current) opt.selected = true;
    el.appendChild(opt);
  }
  el.addEventListener("change", () => onChange(el.value));
  return h("label", { class: "tbp-field" }, h("span", {}, label), el);
}

/** The buffers live at the peak as horizontal bars (unpadded + padding), in the chosen order. */
function drawBuffers(ctx: PageContext<MemoryViewerResult>, box: HTMLElement, raw: MemoryViewerResult): void {
  const live = raw.max_heap ?? [];
  if (live.length === 0) {
    box.appendChild(h("p", { class: "tbp-muted" }, "No buffer is live at the peak in this memory space (its memory is held by allocations that live for the whole program, which XProf does not draw here)."));
    return;
  }
  let order: BufferOrder = ((): BufferOrder => {
    const p = ctx.param("order");
    return p === "size" || p === "padding" ? p : "program";
  })();
  const buttons = h("div", { class: "tbp-segmented", role: "group", "aria-label": "Buffer order" });
  const height = Math.min(900, 60 + live.length * 22);
  const c = chart(ctx, box, { label: "Buffers live at the peak", id: "max_heap", height });
  const draw = (): void => {
    const idx = bufferOrder(live, order, raw.by_size_order ?? [], raw.by_padding_order ?? []);
    const rows = idx.flatMap((i) => live[i] ?? []);
    // Top to bottom in the chosen order: ECharts puts a category axis' first value at the bottom.
    const shown = [...rows].reverse();
    const names = shown.map((b) => b.instruction_name || b.label);
    c.setOption({
      tooltip: {
        trigger: "axis", axisPointer: { type: "shadow" },
        valueFormatter: (v: unknown) => formatBytes(Number(v) * MIB),
      },
      legend: { top: 0 },
      grid: { left: 8, right: 24, top: 28, bottom: 24, containLabel: true },
      xAxis: { type: "value", name: "MiB" },
      yAxis: { type: "category", data: names, axisLabel: { width: 260, overflow: "truncate" } },
      series: [
        { type: "bar", name: "Unpadded", stack: "b", data: shown.map((b) => b.logical_buffer_id < 0 ? b.size_bytes / MIB : Math.min(b.unpadded_size_bytes, b.size_bytes) / MIB) },
        { type: "bar", name: "Padding", stack: "b", data: shown.map((b) => b.logical_buffer_id < 0 ? 0 : Math.max(0, b.size_bytes - b.unpadded_size_bytes) / MIB) },
      ],
    }, { notMerge: true });
    for (const b of buttons.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b.dataset.order === order));
  };
  for (const [key, text] of ORDERS) {
    const b = h("button", { type: "button", class: "tbp-btn", "data-order": key, "aria-pressed": "false" }, text);
    b.addEventListener("click", () => {
      order = key;
      ctx.setParams({ order: key === "program" ? null : key });
      draw();
    });
    buttons.appendChild(b);
  }
  box.insertBefore(buttons, c.el);
  draw();
}

/** XProf's allocation timeline: each traced allocation a band, each buffer a box over its steps. */
function drawTimeline(box: HTMLElement, raw: MemoryViewerResult): void {
  const blocks = raw.buffer_blocks ?? [];
  if (blocks.length === 0) {
    box.appendChild(h("p", { class: "tbp-muted" }, "No heap-simulated allocation in this memory space: every buffer lives for the whole program."));
    return;
  }
  const W = 1000;
  const H = 360;
  const rects = timelineRects(blocks.map((b) => ({
    id: b.logical_buffer_id, name: b.name, offset: b.offset_bytes,
    size: b.size_bytes, start: b.start_step, end: b.end_step,
  })), W, H);
  const root = document.createElementNS(SVG, "svg");
  for (const [k, v] of Object.entries({ class: "tbp-alloc-timeline", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", width: "100%", height: String(H), role: "img", "aria-label": "Allocation timeline" })) root.setAttribute(k, v);
  rects.forEach((r, i) => {
    const rect = document.createElementNS(SVG, "rect");
    const fill = r.container ? "var(--tbp-bg-2, transparent)" : (PALETTE[i % PALETTE.length] ?? "#888");
    for (const [k, v] of Object.entries({ x: r.x, y: r.y, width: r.w, height: r.h, "data-block": r.name, "vector-effect": "non-scaling-stroke" })) rect.setAttribute(k, String(v));
    rect.setAttribute("style", `fill:${fill};stroke:var(--tbp-border);stroke-width:1`);
    const title = document.createElementNS(SVG, "title");
    title.textContent = r.container
      ? `${r.name} allocation: ${formatBytes(r.size)}`
      : `${r.name}\n${formatBytes(r.size)} at offset ${formatBytes(r.offset)}\nsteps ${formatNumber(r.start)}–${formatNumber(r.end)}`;
    rect.appendChild(title);
    root.appendChild(rect);
  });
  box.appendChild(h("p", { class: "tbp-muted" }, "x: heap simulator step (program order, not time); y: offset in the allocations (stacked). Hover a box for its buffer."));
  box.appendChild(root);
}

function render(ctx: PageContext<MemoryViewerResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Memory viewer"));
  const modules = raw.modules;
  const message = raw.message;
  if (message || modules.length === 0) {
    el.appendChild(messageBox({ title: "No HLO module", body: message || "This host carries no buffer assignment." }));
    return;
  }
  const spaces = raw.memory_spaces ?? [];
  const space = String(raw.memory_space ?? 0);
  el.appendChild(h("div", { class: "tbp-toolbar" },
    select("Memory type", "tbp-memory-space-select",
      spaces.map((s) => [String(s.memory_space), `${s.name} — peak ${formatBytes(s.peak_heap_bytes)}`]),
      space, (v) => ctx.setOptions({ memory_space: v === "0" ? null : v })),
    select("Module", "tbp-module-select",
      modules.map((m) => [m.module, `${m.module} — peak ${formatBytes(m.peak_heap_bytes)}`]),
      raw.module ?? "", (v) => ctx.setOptions({ module: v, memory_space: null })),
  ));
  const peak = raw.peak_heap_bytes ?? 0;
  const unpaddedPeak = raw.peak_unpadded_heap_bytes ?? 0;
  const indefinite = raw.indefinite_bytes ?? 0;
  const total = raw.total_buffer_allocation_bytes ?? 0;
  // XProf's header: temporaries = peak - indefinite; fragmentation = (total - peak) / (total - indefinite).
  const tempWithFrag = total - indefinite;
  const fragmentation = tempWithFrag > 0 ? (total - peak) / tempWithFrag : 0;
  el.appendChild(
    cardRow([
      { id: "peak", label: "Peak memory allocation", value: formatBytes(peak), hint: `${formatBytes(peak - unpaddedPeak)} padding overhead` },
      { id: "params", label: "Arguments", value: formatBytes(raw.entry_computation_parameters_bytes ?? 0), hint: "entry computation parameters" },
      { id: "temporaries", label: "HLO temporaries", value: formatBytes(peak - indefinite), hint: `fragmentation ${formatPercent(fragmentation * 100)}` },
      { id: "live_out", label: "May be live out", value: formatBytes(raw.maybe_live_out_bytes ?? 0) },
      { id: "total", label: "All allocations", value: formatBytes(total), hint: `non-reusable ${formatBytes(raw.non_reusable_bytes ?? 0)}` },
    ]),
  );
  const heap = raw.heap_sizes_bytes ?? [];
  const unpadded = raw.unpadded_heap_sizes_bytes ?? [];
  const box = panel(el, "Memory allocation size vs program order (heap simulator events)");
  if (heap.length === 0) {
    box.appendChild(h("p", { class: "tbp-muted" }, "No heap simulator trace: every buffer lives for the whole run."));
  } else {
    const peakPos = (raw.peak_heap_position ?? 0) + 1;
    chart(ctx, box, { label: "Heap size over program order", id: "heap_sizes", height: 300 }).setOption({
      tooltip: { trigger: "axis", valueFormatter: (v: unknown) => `${formatNumber(Number(v))} MiB` },
      legend: { top: 0 },
      grid: { left: 72, right: 24, top: 32, bottom: 40 },
      xAxis: { type: "category", name: "event", data: heap.map((_, i) => String(i)) },
      yAxis: { type: "value", name: "MiB" },
      series: [
        { type: "line", name: "Heap", step: "end", showSymbol: false, data: heap.map((b) => b / MIB),
          markPoint: { data: [{ coord: [String(peakPos), (heap[peakPos] ?? 0) / MIB], name: "peak" }] } },
        { type: "line", name: "Unpadded", step: "end", showSymbol: false, data: unpadded.map((b) => b / MIB) },
      ],
    });
  }
  drawBuffers(ctx, panel(el, "Buffers live at the peak"), raw);
  drawTimeline(panel(el, "Allocation timeline"), raw);
  if (result.tables.buffers) el.appendChild(tableWidget(ctx, "buffers", { title: "Buffers live at the peak (table)" }).el);
}

export const memoryViewerPage: PageSpec<MemoryViewerResult> = { render, hideOptions: ["module", "memory_space"] };
