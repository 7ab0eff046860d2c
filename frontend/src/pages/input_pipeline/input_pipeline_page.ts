// Input pipeline analyzer: is the program input-bound (XProf's verdict), how long each step
// waits for input (device side), what the host's input pipeline spends its time on.

import type { InputPipelineResult, InputTimeBreakdown } from "../../data/schema.gen";
import { formatNumber, formatPercent } from "../../base/format";
import { type Card, cardRow } from "../../widgets/cards";
import { axisLabel, unitFormatter } from "../../widgets/chart";
import { h } from "../../widgets/dom";
import { chart, pageTitle, pieChart, tableWidget } from "../common";
import type { PageContext } from "../context";
import { inputCardHint, inputVerdict } from "../input_verdict";
import type { PageSpec } from "../registry";
import { breakdownStatsTable, diagnosticsBoxes, statText, stepsText } from "../steps_common";

const HOST_PARTS: readonly [keyof InputTimeBreakdown, string][] = [
  ["enqueue_us", "Enqueuing data to the device"],
  ["demanded_file_read_us", "Reading data from files on demand"],
  ["advanced_file_read_us", "Reading data from files in advance"],
  ["preprocessing_us", "Data preprocessing"],
  ["unclassified_non_enqueue_us", "Other data reading or processing"],
];

function render(ctx: PageContext<InputPipelineResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Input pipeline analyzer"));
  for (const box of diagnosticsBoxes(raw.diagnostics, raw.steps)) el.appendChild(box);

  const verdict = raw.verdict;
  const device = raw.device_side;
  const host = raw.host_side;
  const v = inputVerdict(verdict);
  const bound = v.bound;
  const tone = v.tone;
  const verdictBox = h(
    "section",
    { class: `tbp-message tbp-verdict tbp-tone-${tone}`, "data-verdict": bound },
    h("h2", {}, v.label || "Verdict"),
    v.thresholds ? h("p", { class: "tbp-muted", "data-thresholds": "" }, `Thresholds: ${v.thresholds} of the step time waiting for input.`) : null,
    // A statement that only repeats why there are no steps (the "Steps" box above says it) is left out.
    ...(["statement", "kernel_launch_statement", "all_other_statement", "device_collectives_statement", "summary_next_step"] as const)
      .map((k) => verdict[k])
      .filter((t) => Boolean(t) && t !== raw.steps.diagnosis)
      .map((t) => h("p", {}, t)),
  );
  el.appendChild(verdictBox);

  const cards: Card[] = [
    { id: "step_time", label: "Average step time", value: statText(device.step_time_ms) },
    { id: "input_time", label: "Average input wait", value: statText(device.input_ms) },
    { id: "input_percent", label: "Waiting for input", value: formatPercent(verdict.input_percent ?? NaN), hint: inputCardHint(v), tone },
    { id: "steps", label: "Steps", value: stepsText(raw.steps) },
    { id: "tf_data", label: "tf.data input", value: host.tf_data_used ? "yes" : "no", hint: `${formatNumber(host.input_op_time_ms)} ms in input ops` },
  ];
  el.appendChild(cardRow(cards));

  // Device side: per step, the time waiting for input against the rest of the step.
  const graph = device.step_time_graph;
  const stepNames = (graph.step ?? []).map(String);
  const stepMs = (graph.step_time_ms ?? []).map((v) => (typeof v === "number" ? v : 0));
  const inputMs = (graph.input_ms ?? []).map((v) => (typeof v === "number" ? v : 0));
  const grid = h("div", { class: "tbp-grid-2 tbp-grid-wide" });
  el.appendChild(grid);
  const stepBox = h("div", { class: "tbp-panel" }, h("h2", {}, "Device side: step time and input wait"));
  grid.appendChild(stepBox);
  // No steps: an empty chart frame would read as a chart that failed to draw; one line says why.
  if (stepNames.length === 0) {
    stepBox.appendChild(h("p", { class: "tbp-muted", "data-no-steps": "" }, "No steps, so no step time or input wait to draw."));
  } else chart(ctx, stepBox, { label: "Step time and input wait per step", id: "input_wait", height: 300 }).setOption({
    color: ["#e15759", "#4e79a7", "#f28e2b"],
    grid: { left: 8, right: 16, top: 36, bottom: 8, containLabel: true },
    legend: { top: 0 },
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
    xAxis: { type: "category", data: stepNames, axisLabel: { hideOverlap: true } },
    yAxis: [
      { type: "value", axisLabel: { formatter: axisLabel("ms") } },
      { type: "value", max: 100, axisLabel: { formatter: "{value}%" }, splitLine: { show: false } },
    ],
    series: [
      { type: "bar", name: "Waiting for input", stack: "s", data: inputMs, tooltip: { valueFormatter: unitFormatter("ms") }, barMaxWidth: 48 },
      { type: "bar", name: "Rest of the step", stack: "s", data: stepMs.map((s, i) => Math.max(0, s - (inputMs[i] ?? 0))), tooltip: { valueFormatter: unitFormatter("ms") }, barMaxWidth: 48 },
      { type: "line", name: "Input % of step", yAxisIndex: 1, data: stepMs.map((s, i) => (s > 0 ? ((inputMs[i] ?? 0) / s) * 100 : 0)), tooltip: { valueFormatter: unitFormatter("%") } },
    ],
  });

  // Host side: where the input pipeline's own time goes.
  const parts = host.input_time_breakdown_us;
  const slices = HOST_PARTS.map(([k, label]) => ({ name: label, value: parts[k] })).filter((s) => s.value > 0);
  const hasInputOps = (result.tables.input_ops?.totalRows ?? 0) > 0;
  if (slices.length) {
    const hostBox = h("div", { class: "tbp-panel" }, h("h2", {}, "Host side: input time breakdown"));
    grid.appendChild(hostBox);
    pieChart(ctx, hostBox, { label: "Host input time breakdown", id: "host_input", height: 300 }, slices, "us",
      { measure: "host input time", kind: "part" });
  } else {
    // Nothing on the host side: the device chart takes the row, and one line says why (an
    // empty half-width box reads as a page that failed to draw).
    grid.classList.add("tbp-grid-single");
    stepBox.appendChild(h("p", { class: "tbp-muted", "data-no-host-input": "" },
      "No host-side input operations were recorded, so there is no host-side breakdown."));
  }

  if (stepNames.length > 0) {
    el.appendChild(h("section", { class: "tbp-section" }, h("h2", {}, "Device-side step time breakdown"), breakdownStatsTable(device.breakdown_ms)));
  }

  const recs = raw.recommendations;
  if (recs.length) el.appendChild(h("section", { class: "tbp-section" }, h("h2", {}, "What to try"), h("ul", {}, recs.map((r) => h("li", {}, r)))));
  if (result.tables.input_ops && hasInputOps) el.appendChild(tableWidget(ctx, "input_ops", { title: "Host input operations" }).el);
  if (result.tables.steps) el.appendChild(tableWidget(ctx, "steps", { title: "Steps" }).el);
}

export const inputPipelinePage: PageSpec<InputPipelineResult> = { render };
