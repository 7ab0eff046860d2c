// GPU kernel stats: time per kernel (pie) and every kernel with its launch shape, occupancy
// and TensorCore use (table).

import { formatDuration, formatNumber, formatPercent } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { pageTitle, panel, pieChart, tableWidget } from "../common";
import type { PageContext } from "../context";
import { bool, num, objs, str } from "../fields";
import { registerPage } from "../registry";

function render(ctx: PageContext): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "GPU kernel stats"));
  if (bool(raw, "has_gpu_kernels") === false) {
    el.appendChild(messageBox({ title: "No GPU kernels", body: "This host recorded no GPU kernel launches." }));
  }
  const total = num(raw, "total_duration_us") ?? 0;
  const tc = num(raw, "tensorcore_duration_us") ?? 0;
  const eligible = num(raw, "tensorcore_eligible_duration_us") ?? 0;
  el.appendChild(
    cardRow([
      { id: "kernels", label: "Distinct kernels", value: formatNumber(num(raw, "row_count") ?? 0), hint: `${formatNumber(num(raw, "kernel_event_count") ?? 0)} launches` },
      { id: "total", label: "Kernel time", value: formatDuration(total, "us") },
      { id: "tensorcore", label: "Time in TensorCore kernels", value: total > 0 ? formatPercent((tc / total) * 100) : "–", hint: formatDuration(tc, "us") },
      { id: "eligible", label: "Time in TensorCore-eligible ops", value: total > 0 ? formatPercent((eligible / total) * 100) : "–", hint: formatDuration(eligible, "us") },
    ]),
  );
  const grid = h("div", { class: "tbp-grid-2" });
  el.appendChild(grid);
  const box = panel(grid, "Kernel time by kernel");
  const slices = objs(raw, "pie_by_kernel").map((o) => ({ name: str(o, "name"), value: num(o, "total_duration_us") ?? 0 }));
  pieChart(ctx, box, { label: "Kernel time by kernel", id: "pie_by_kernel", height: 300 }, slices, "us", { measure: "kernel time", kind: "kernel" });
  if (result.tables.kernels) el.appendChild(tableWidget(ctx, "kernels", { title: "Kernels" }).el);
}

registerPage({ tools: ["kernel_stats"], render });
