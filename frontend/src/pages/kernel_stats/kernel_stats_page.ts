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
  // The backend's shares (XProf's rules); null when the rules recognise nothing in this run,
  // where a 0 % would be false (JAX/PyTorch op names, nvjet/Triton GEMMs): the card says why.
  const tcShare = num(raw, "tensorcore_fraction");
  const eligibleShare = num(raw, "tensorcore_eligible_fraction");
  const note = str(raw, "tensorcore_note");
  const share = (v: number | null, us: number): { value: string; hint: string; title?: string } =>
    v === null
      ? { value: "not determined", hint: "XProf's rules recognise no op or kernel here", title: note }
      : { value: formatPercent(v * 100), hint: formatDuration(us, "us") };
  el.appendChild(
    cardRow([
      { id: "kernels", label: "Distinct kernels", value: formatNumber(num(raw, "row_count") ?? 0), hint: `${formatNumber(num(raw, "kernel_event_count") ?? 0)} launches` },
      { id: "total", label: "Kernel time", value: formatDuration(total, "us") },
      { id: "tensorcore", label: "Time in TensorCore kernels", ...share(tcShare, tc) },
      { id: "eligible", label: "Time in TensorCore-eligible ops", ...share(eligibleShare, eligible) },
    ]),
  );
  if (note) el.appendChild(h("p", { class: "tbp-muted", "data-tensorcore-note": "" }, note));
  const grid = h("div", { class: "tbp-grid-2" });
  el.appendChild(grid);
  const box = panel(grid, "Kernel time by kernel");
  const slices = objs(raw, "pie_by_kernel").map((o) => ({ name: str(o, "name"), value: num(o, "total_duration_us") ?? 0 }));
  pieChart(ctx, box, { label: "Kernel time by kernel", id: "pie_by_kernel", height: 300 }, slices, "us", { measure: "kernel time", kind: "kernel" });
  if (result.tables.kernels) el.appendChild(tableWidget(ctx, "kernels", { title: "Kernels" }).el);
}

registerPage({ tools: ["kernel_stats"], render });
