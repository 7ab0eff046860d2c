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
  // The backend's shares (XProf's rules); null when the rules recognise nothing in this run,
  // where a 0 % would be false (JAX/PyTorch op names, nvjet/Triton GEMMs): the card says why.
  const tcShare = raw.tensorcore_fraction;
  const eligibleShare = raw.tensorcore_eligible_fraction;
  const note = raw.tensorcore_note;
  const share = (v: number | null, us: number): { value: string; hint: string; title?: string } =>
    v === null
      ? { value: "not determined", hint: "XProf's rules recognise no op or kernel here", title: note }
      : { value: formatPercent(v * 100), hint: formatDuration(us, "us") };
  el.appendChild(
    cardRow([
      { id: "kernels", label: "Distinct kernels", value: formatNumber(raw.row_count), hint: `${formatNumber(raw.kernel_event_count)} launches` },
      { id: "total", label: "Kernel time", value: formatDuration(total, "us") },
      { id: "tensorcore", label: "Time in TensorCore kernels", ...share(tcShare, tc) },
      { id: "eligible", label: "Time in TensorCore-eligible ops", ...share(eligibleShare, eligible) },
    ]),
  );
  if (note) el.appendChild(h("p", { class: "tbp-muted", "data-tensorcore-note": "" }, note));
  const grid = h("div", { class: "tbp-grid-2" });
  el.appendChild(grid);
  const box = panel(grid, "Kernel time by kernel");
  const slices = raw.pie_by_kernel.map((o) => ({ name: o.name, value: o.total_duration_us }));
  pieChart(ctx, box, { label: "Kernel time by kernel", id: "pie_by_kernel", height: 300 }, slices, "us", { measure: "kernel time", kind: "kernel" });
  if (result.tables.kernels) el.appendChild(tableWidget(ctx, "kernels", { title: "Kernels" }).el);
}

export const kernelStatsPage: PageSpec<KernelStatsResult> = { render };
