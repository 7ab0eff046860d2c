// Pod viewer: one step at a time (slider), a stacked bar per host/device of where that step's
// time went, and a details card for the column under the mouse.

import type { PodViewerResult } from "../../data/schema.gen";
import { formatDuration, formatNumber, formatPercent } from "../../base/format";
import { html, joinHtml, tooltipHtml } from "../../base/html";
import { unitFormatter, axisLabel } from "../../widgets/chart";
import { cardRow } from "../../widgets/cards";
import { clear, h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, panel, tableWidget } from "../common";
import type { PageContext } from "../context";
import { appendGpuBreakdown } from "../gpu_breakdown/gpu_breakdown_section";
import type { PageSpec } from "../registry";
import { STEP_CATEGORIES, legendRowCount } from "../steps_common";
import { ALL_DEVICES, columnLabel, hostLabel, shownColumns } from "./pod_columns";

/** Pod viewer category labels (XProf's names) -> the colours of the step categories. */
const COLORS: Record<string, string> = {
  "Device compute": "#4e79a7",
  "Device to device": "#76b7b2",
  "Device collective communication": "#b07aa1",
  "Host compute": "#59a14f",
  "Kernel launch": "#edc948",
  Input: "#e15759",
  Output: "#ff9da7",
  Compilation: "#9c755f",
  "All others": "#bab0ac",
};

const fmtUs = unitFormatter("us");

/** One column (host × device) in one step. */
interface Column {
  host: string;
  device: string;
  totalUs: number;
  bottleneck: string;
  breakdownUs: Record<string, number>;
}

/** Step names and the columns of step i, from the columnar schema (docs/api.md, pod_viewer). */
function decodePod(raw: PodViewerResult): { stepNames: string[]; columnsAt: (i: number) => Column[] } {
  const stepNames = raw.steps.step;
  return {
    stepNames,
    columnsAt: (i) =>
      raw.cores.map((c) => {
        const breakdownUs: Record<string, number> = {};
        for (const [k, values] of Object.entries(c.breakdown_us)) breakdownUs[k] = values[i] ?? 0;
        return {
          host: c.host,
          device: c.device,
          totalUs: c.total_duration_us[i] ?? 0,
          bottleneck: c.bottleneck[i] ?? "",
          breakdownUs,
        };
      }),
  };
}

function render(ctx: PageContext<PodViewerResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Pod viewer"));
  const { stepNames, columnsAt } = decodePod(raw);
  const steps = stepNames;
  if (steps.length === 0) {
    el.appendChild(messageBox({ title: "No steps", body: "The pod viewer needs steps; none were found." }));
    if (result.tables.pod_stats) el.appendChild(tableWidget(ctx, "pod_stats").el);
    return;
  }
  const categories = Object.values(raw.step_breakdown_events);
  const labels = categories.length ? categories : STEP_CATEGORIES.map((c) => c.label);
  el.appendChild(
    cardRow([
      { id: "steps", label: "Steps", value: formatNumber(steps.length) },
      { id: "columns", label: "Devices", value: formatNumber(raw.cores.filter((k) => k.device !== ALL_DEVICES).length) },
      { id: "device", label: "Device type", value: raw.device_type || "–" },
    ]),
  );

  const initial = Math.min(steps.length - 1, Math.max(0, Number(ctx.param("step") ?? "0") || 0));
  const slider = h("input", { type: "range", min: 0, max: steps.length - 1, step: 1, value: initial, class: "tbp-step-slider", "aria-label": "Step" });
  const stepLabel = h("span", { class: "tbp-step-label" });
  el.appendChild(h("div", { class: "tbp-toolbar" }, h("label", { class: "tbp-field" }, h("span", {}, "Step"), slider, stepLabel)));

  // One column (one host with one device, or a host-only run): a chart of one bar says less than
  // its breakdown table, so the page shows the table alone.
  const single = shownColumns(columnsAt(initial)).length <= 1;
  const grid = h("div", { class: single ? "" : "tbp-grid-side" });
  el.appendChild(grid);
  const box = single ? null : panel(grid, "Step time by host and device");
  const details = h("div", { class: "tbp-panel tbp-details", "data-details": "", "data-single-column": single ? "" : null });
  grid.appendChild(details);
  const c = box ? chart(ctx, box, { label: "Step breakdown per host and device", id: "pod_step", height: 340 }) : null;

  let cores: Column[] = [];
  const showDetails = (i: number): void => {
    const core = cores[i];
    clear(details);
    if (!core) {
      details.append(h("h2", {}, "Details"), h("p", { class: "tbp-muted" }, "Point at a column to see its breakdown."));
      return;
    }
    const total = core.totalUs;
    details.append(
      h("h2", { title: core.host }, `${single ? "Step breakdown: " : ""}${hostLabel(core.host)} · ${core.device}`),
      h("p", {}, `Step time ${formatDuration(total, "us")}; bottleneck: `, h("b", {}, core.bottleneck || "–")),
      h(
        "table",
        { class: "tbp-table tbp-static-table" },
        h(
          "tbody",
          {},
          labels.map((l) => {
            const v = core.breakdownUs[l] ?? 0;
            return h("tr", {}, h("td", {}, h("span", { class: "tbp-swatch", style: `background:${COLORS[l] ?? "#999"}` }), l), h("td", { class: "tbp-num" }, formatDuration(v, "us")), h("td", { class: "tbp-num" }, total > 0 ? formatPercent((v / total) * 100) : "–"));
          }),
        ),
      ),
    );
  };
  const draw = (index: number): void => {
    const all = columnsAt(index);
    cores = shownColumns(all).map((i) => all[i]).filter((k): k is Column => k !== undefined);
    stepLabel.textContent = ` ${steps[index] ?? `#${index}`} (${index + 1} of ${steps.length})`;
    const hosts = new Set(cores.map((k) => k.host));
    const names = cores.map((k) => columnLabel(k, hosts.size > 1));
    const used = labels.filter((l) => cores.some((k) => (k.breakdownUs[l] ?? 0) > 0));
    showDetails(0);
    if (!c) return;
    c.setOption({
      grid: { left: 8, right: 16, top: 14 + 22 * legendRowCount(used, c.el.clientWidth), bottom: 8, containLabel: true },
      legend: { top: 0, type: "plain", itemGap: 10 },
      // The column's full host id (a PyTorch rank's trace id) heads its tooltip; the axis says "rank N".
      tooltip: {
        trigger: "axis",
        axisPointer: { type: "shadow" },
        formatter: tooltipHtml((ps: { dataIndex?: number; seriesName?: string; value?: unknown }[]) => {
          const k = cores[ps[0]?.dataIndex ?? -1];
          const lines = ps.filter((p) => typeof p.value === "number" && p.value > 0).map((p) => html`${p.seriesName ?? ""}: ${fmtUs(p.value)}`);
          return k ? joinHtml([html`<b>${k.host}</b> · ${k.device}`, ...lines]) : joinHtml(lines);
        }),
      },
      // Two-line labels (host, device) that wrap rather than cut; the tooltip has them whole.
      xAxis: { type: "category", data: names, axisLabel: { interval: 0, width: 120, overflow: "break", lineHeight: 14 } },
      yAxis: { type: "value", axisLabel: { formatter: axisLabel("us") } },
      series: used.map((l) => ({ type: "bar", name: l, stack: "core", itemStyle: { color: COLORS[l] }, barMaxWidth: 64, data: cores.map((k) => k.breakdownUs[l] ?? 0) })),
    });
  };
  c?.on("mouseover", (p) => {
    const i = (p as { dataIndex?: number }).dataIndex;
    if (typeof i === "number") showDetails(i);
  });
  slider.addEventListener("input", () => {
    const i = Number(slider.value);
    draw(i);
    ctx.setParams({ step: i === 0 ? null : String(i) });
  });
  draw(initial);
  if (result.tables.pod_stats) el.appendChild(tableWidget(ctx, "pod_stats", { title: "Every step, host and device" }).el);
  appendGpuBreakdown(ctx, el);
}

// The step slider replaces the backend's `step` option (every step comes in one response).
export const podViewerPage: PageSpec<PodViewerResult> = { hideOptions: ["step"], render };
