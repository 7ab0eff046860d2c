// GPU kernel stats: time per kernel (pie) and every kernel with its launch shape, occupancy
// and TensorCore use (table).

import type { KernelStatsResult } from "../../data/schema.gen";
import { formatDuration, formatNumber, formatPercent } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { pageTitle, panel, pieChart, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";

function render(ctx: PageContext<KernelStatsResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "GPU kernel stats"));
  if (!raw.has_gpu_kernels) {
    el.appendChild(messageBox({ title: "No GPU kernels", body: "This host recorded no GPU kernel launches." }));
  }
  const total = raw.total_duration_us;
  const tc = raw.tensorcore_duration_us;
  const eligible = raw.tensorcore_eligible_duration_us;
  el.appendChild(
    cardRow([
      { id: "kernels", label: "Distinct kernels", value: formatNumber(raw.row_count), hint: `${formatNumber(raw.kernel_event_count)} launches` },
      { id: "total", label: "Kernel time", value: formatDuration(total, "us") },
      { id: "tensorcore", label: "Time in TensorCore kernels", value: total > 0 ? formatPercent((tc / total) * 100) : "–", hint: formatDuration(tc, "us") },
      { id: "eligible", label: "Time in TensorCore-eligible ops", value: total > 0 ? formatPercent((eligible / total) * 100) : "–", hint: formatDuration(eligible, "us") },
    ]),
  );
  const grid = h("div", { class: "tbp-grid-2" });
  el.appendChild(grid);
  const box = panel(grid, "Kernel time by kernel");
  const slices = raw.pie_by_kernel.map((o) => ({ name: o.name, value: o.total_duration_us }));
  pieChart(ctx, box, { label: "Kernel time by kernel", id: "pie_by_kernel", height: 300 }, slices, "us", { measure: "kernel time", kind: "kernel" });
  if (result.tables.kernels) el.appendChild(tableWidget(ctx, "kernels", { title: "Kernels" }).el);
}

export const kernelStatsPage: PageSpec<KernelStatsResult> = { render };
