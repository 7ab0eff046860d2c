// Memory viewer: one HLO module's buffer assignment — the heap over the heap simulator's
// events (padded and unpadded), the peak, and the buffers live at the peak.

import type { MemoryViewerResult } from "../../data/schema.gen";
import { formatBytes, formatNumber } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, panel, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";

const MIB = 2 ** 20;

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
  const current = raw.module;
  const select = h("select", { class: "tbp-module-select", "aria-label": "HLO module" });
  for (const m of modules) {
    const name = m.module;
    const opt = h("option", { value: name }, `${name} — peak ${formatBytes(m.peak_heap_bytes)}`);
    if (name === current) opt.selected = true;
    select.appendChild(opt);
  }
  select.addEventListener("change", () => ctx.setOptions({ module: select.value }));
  el.appendChild(h("div", { class: "tbp-toolbar" }, h("label", { class: "tbp-field" }, h("span", {}, "Module"), select)));
  el.appendChild(
    cardRow([
      { id: "peak", label: "Peak heap", value: formatBytes(raw.peak_heap_bytes ?? 0), hint: `unpadded ${formatBytes(raw.peak_unpadded_heap_bytes ?? 0)}` },
      { id: "params", label: "Entry parameters", value: formatBytes(raw.entry_computation_parameters_bytes ?? 0) },
      { id: "live_out", label: "May be live out", value: formatBytes(raw.maybe_live_out_bytes ?? 0) },
      { id: "total", label: "All allocations", value: formatBytes(raw.total_buffer_allocation_bytes ?? 0), hint: `non-reusable ${formatBytes(raw.non_reusable_bytes ?? 0)}` },
    ]),
  );
  const heap = raw.heap_sizes_bytes ?? [];
  const unpadded = raw.unpadded_heap_sizes_bytes ?? [];
  const box = panel(el, "Heap over program order (heap simulator events)");
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
  if (result.tables.buffers) el.appendChild(tableWidget(ctx, "buffers", { title: "Buffers live at the peak" }).el);
}

export const memoryViewerPage: PageSpec<MemoryViewerResult> = { render, hideOptions: ["module"] };
