// Overview: how long a step takes and where the time goes, the top ops, the run's hardware,
// and XProf's recommendation with links to the pages it names.

import type { OverviewRecommendation, OverviewResult, PerformanceSummary, RunEnvironment } from "../../data/schema.gen";
import { formatNumber, formatPercent } from "../../base/format";
import { type Card, cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { chart, pageTitle, pieChart, tableWidget } from "../common";
import type { PageContext } from "../context";
import { idlePanel } from "./idle_panel";
import { inputCardHint, inputVerdict } from "../input_verdict";
import { type Metric, metricCard, metricsOf } from "../metrics";
import type { PageSpec } from "../registry";
import { diagnosticsBoxes, STEP_CATEGORIES, statText, stepConfidenceText, stepHosts, stepsText, stepTimeChart } from "../steps_common";

function render(ctx: PageContext<OverviewResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Overview"));
  for (const box of diagnosticsBoxes(raw.diagnostics, raw.steps)) el.appendChild(box);

  const perf = raw.performance_summary;
  const env = raw.run_environment;
  const steps = raw.steps;
  const stepTime = perf.step_time_ms;
  const hasSteps = steps.step_count > 0;
  const metrics = metricsOf(raw);
  // Colour and words from the backend's verdict, so the card and the recommendation agree.
  const verdict = inputVerdict(raw.recommendation);
  const hasDevice = env.device_count > 0;
  const cards: Card[] = [
    hasSteps
      ? { id: "step_time", label: "Average step time", value: statText(stepTime), hint: `min ${formatNumber(stepTime.min ?? NaN)} ms, max ${formatNumber(stepTime.max ?? NaN)} ms` }
      : { id: "step_time", label: "Average step time", value: "not determined", hint: "no steps in this profile (see Steps above)" },
    { id: "steps", label: "Steps", value: stepsText(steps), hint: stepConfidenceText(steps) },
    { id: "input", label: "Waiting for input", value: hasSteps ? formatPercent(perf.input_percent ?? NaN) : "not determined", hint: inputCardHint(verdict), tone: hasSteps ? verdict.tone : "neutral" },
    ...headlineCards(metrics),
    ...opPlacementCards(perf, hasDevice),
  ];
  if (hasDevice) {
    cards.push(precisionCard(perf));
  }
  el.appendChild(cardRow(cards));
  if (env.hardware_type === "TPU") el.appendChild(tpuCards(ctx, metrics));

  el.appendChild(recommendation(ctx, raw.recommendation, steps.diagnosis));

  if (hasSteps) {
    const grid = h("div", { class: "tbp-grid-2 tbp-grid-wide" });
    el.appendChild(grid);
    const stepBox = h("div", { class: "tbp-panel" }, h("h2", {}, "Step time"));
    grid.appendChild(stepBox);
    const graph = raw.step_time_graph;
    const hosts = ctx.request.host === ctx.allHosts ? stepHosts(graph, result.tables.steps) : null;
    stepTimeChart(chart(ctx, stepBox, { label: hosts ? "Step time per step and host, by category" : "Step time per step, by category", id: "step_time", height: 300 }), graph, STEP_CATEGORIES, hosts);

    const pieBox = h("div", { class: "tbp-panel" }, h("h2", {}, "Average step time breakdown"));
    grid.appendChild(pieBox);
    const breakdown = perf.breakdown_ms;
    const slices = STEP_CATEGORIES.map((c) => ({ name: c.label, value: breakdown[`${c.key}_ms`]?.avg ?? 0, color: c.color }));
    pieChart(ctx, pieBox, { label: "Average step time breakdown", id: "breakdown", height: 300 }, slices, "ms", { measure: "step time", kind: "category" });
  }

  if (result.tables.top_ops) {
    const side = raw.top_ops_side;
    el.appendChild(tableWidget(ctx, "top_ops", { title: `Top operations${side ? ` (${side})` : ""}`, pageSize: 10 }).el);
  }
  el.appendChild(environment(env));
  const idle = idlePanel(ctx, metrics);
  if (idle) el.appendChild(idle);
  if (result.tables.steps && hasSteps) el.appendChild(tableWidget(ctx, "steps", { title: "Steps" }).el);
}

/** One card per concept: device idle and communication as XProf's overview measures them (of step time). */
function headlineCards(metrics: ReadonlyMap<string, Metric>): Card[] {
  const out: Card[] = [];
  const idle = metrics.get("device_idle_of_step_time");
  if (idle) {
    const v = idle.valuePercent;
    out.push(metricCard(idle, { id: "device_idle", tone: v === null ? "neutral" : v > 50 ? "bad" : v > 20 ? "warn" : "good" }));
  }
  const comm = metrics.get("device_collectives_of_step_time");
  if (comm) out.push(metricCard(comm, { id: "communication" }));
  return out;
}

/**
 * A TPU run's device cards as XProf's overview shows them: duty cycle (the busy share of each
 * core's profiled time: 100 % minus device idle of the profiled device time) and the whole
 * program's FLOPS and HBM bandwidth utilization (op profile's root, fetched after the page).
 */
function tpuCards(ctx: PageContext, metrics: ReadonlyMap<string, Metric>): HTMLElement {
  const idle = metrics.get("device_idle_of_device_time")?.valuePercent ?? null;
  const pending = "…";
  const cards = (flops: string, hbm: string): Card[] => [
    { id: "tpu_duty_cycle", label: "TPU duty cycle", value: idle === null ? "not determined" : formatPercent(100 - idle),
      hint: "busy share of each TPU core's profiled time", title: "100 % minus device idle of the profiled device time (XProf's device duty cycle)." },
    { id: "flops_utilization", label: "FLOPS utilization", value: flops, hint: "whole program, of the TPU's peak FLOP rate",
      title: "The whole program's FLOPs over its busy device time, divided by the peak FLOP rate (op profile's root)." },
    { id: "hbm_utilization", label: "HBM bandwidth utilization", value: hbm, hint: "whole program, of the TPU's peak HBM bandwidth",
      title: "The whole program's HBM bytes over its device time, divided by the peak HBM bandwidth (op profile's root)." },
  ];
  const holder = h("div", { "data-section": "tpu_cards", "data-op-profile": "loading" }, cardRow(cards(pending, pending)));
  const pct = (v: number | null | undefined): string => (v === null || v === undefined ? "not determined" : formatPercent(100 * v));
  ctx.api
    .data({ run: ctx.request.run, host: ctx.request.host, tool: "op_profile", options: {} }, 0, ctx.signal)
    .then((r) => {
      const root = (r.raw as unknown as { by_category?: { flops_utilization?: number | null; hbm_bw_utilization?: number | null } }).by_category;
      holder.replaceChildren(cardRow(cards(pct(root?.flops_utilization), pct(root?.hbm_bw_utilization))));
      holder.setAttribute("data-op-profile", "ready");
    })
    .catch(() => {
      if (ctx.signal.aborted) return;
      holder.replaceChildren(cardRow(cards("not determined", "not determined")));
      holder.setAttribute("data-op-profile", "error");
    });
  return holder;
}

/**
 * Where ops run, as XProf shows it: by time and by count, each labelled. The count
 * needs `host_op_count_percent` / `device_op_count_percent` from the backend; until it sends
 * them only the card by time is shown.
 */
const PRECISION_SOURCES: Readonly<Record<string, string>> = {
  hlo_element_types: "from the HLO ops' element types",
  tensor_shapes: "from the kernels' tensor shapes (XProf's rule)",
  operator_input_types: "from the launching operators' input types and kernel names",
};

/** 16-bit share of device compute, and where it comes from; "unknown" when nothing in the profile tells. */
export function precisionCard(perf: PerformanceSummary): Card {
  const low = perf.device_compute_16bit_percent;
  const high = perf.device_compute_32bit_percent;
  const source = PRECISION_SOURCES[perf.device_compute_precision_source];
  if (low === null || source === undefined) {
    return { id: "precision", label: "Device compute precision", value: "unknown", hint: "the profile names no element types", title: "Neither HLO modules, tensor shapes nor (PyTorch) operator input types in the profile say which float types the device computes in." };
  }
  return { id: "precision", label: "Device compute precision", value: `${formatPercent(low)} 16-bit`, hint: `${formatPercent(high ?? 0)} 32-bit, ${source}`, title: "Share of device compute time (collectives and data movement excluded) in bf16/fp16 versus fp32/fp64." };
}

type PlacementKey = "host_op_time_percent" | "device_op_time_percent" | "host_op_count_percent" | "device_op_count_percent"
  | "host_op_time_eager_percent" | "device_op_time_eager_percent";

export function opPlacementCards(perf: Pick<PerformanceSummary, PlacementKey>, hasDevice: boolean): Card[] {
  const pct = (key: PlacementKey): string => formatPercent(perf[key]);
  const byTime: Card = hasDevice
    ? { id: "op_placement_time", label: "Op placement, by time", value: `${pct("device_op_time_percent")} device`,
      hint: `${pct("host_op_time_percent")} host · eager: ${pct("device_op_time_eager_percent")} of device, ${pct("host_op_time_eager_percent")} of host op time` }
    : { id: "op_placement_time", label: "Op placement, by time", value: `${pct("host_op_time_percent")} host`,
      hint: `${pct("host_op_time_eager_percent")} of it eager` };
  const countKey = hasDevice ? "device_op_count_percent" : "host_op_count_percent";
  return [byTime, {
    id: "op_placement_count", label: "Op placement, by count",
    value: `${pct(countKey)} ${hasDevice ? "device" : "host"}`,
    hint: hasDevice ? `${pct("host_op_count_percent")} host (of all ops run)` : "of all ops run",
  }];
}

/** XProf's recommendation; a statement that only repeats why there are no steps (shown above) is left out. */
function recommendation(ctx: PageContext, rec: OverviewRecommendation, stepsDiagnosis: string): HTMLElement {
  const box = h("section", { class: "tbp-message tbp-recommendation", "data-recommendation": "" }, h("h2", {}, "Recommendation"));
  // The causes by their share of the step time, largest first; without steps, the verdict alone
  // (a statement that only repeats why there are no steps, shown above, is left out).
  const texts = rec.causes.length ? rec.causes.map((c) => c.statement) : [rec.statement];
  for (const text of [...texts, rec.precision_statement]) {
    if (text && text !== stepsDiagnosis) box.appendChild(h("p", {}, text));
  }
  const next = rec.next_steps;
  if (next.length) {
    box.appendChild(h("h3", {}, "Next steps"));
    box.appendChild(
      h(
        "ul",
        {},
        next.map((n) => {
          const tool = n.tool;
          const a = h("a", { class: "tbp-link", href: ctx.href(tool), "data-next-tool": tool }, toolLabel(tool));
          a.addEventListener("click", (e) => {
            if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
            e.preventDefault();
            ctx.navigate(tool);
          });
          return h("li", {}, a, `: ${n.why}`);
        }),
      ),
    );
  }
  return box;
}

const TOOL_LABELS: Record<string, string> = {
  input_pipeline_analyzer: "Input pipeline analyzer",
  tf_data_bottleneck_analysis: "tf.data bottleneck analysis",
  pod_viewer: "Pod viewer",
  framework_op_stats: "Framework op stats",
  trace_viewer: "Trace viewer",
  kernel_stats: "Kernel stats",
  memory_profile: "Memory profile",
  op_profile: "Op profile",
};

function toolLabel(tool: string): string {
  return TOOL_LABELS[tool] ?? tool;
}

function environment(env: RunEnvironment): HTMLElement {
  const kv = (k: string, v: string): HTMLElement => h("div", { class: "tbp-kv-row" }, h("span", { class: "tbp-kv-key" }, k), h("span", {}, v));
  const devices = env.devices;
  return h(
    "section",
    { class: "tbp-section tbp-kv", "data-section": "environment" },
    h("h2", {}, "Run environment"),
    kv("Hosts", `${formatNumber(env.host_count)} (${env.hosts.join(", ")})`),
    kv("Hardware", env.hardware_type.replace(/_/g, " ") || "–"),
    kv("Devices", devices.length ? `${devices.length} × ${env.device_model || env.device_type}` : "none (host only)"),
    // A TPU's device plane is one TensorCore, as XProf counts its device cores.
    env.hardware_type === "TPU" && devices.length ? kv("TPU cores", formatNumber(devices.length)) : null,
    // XProf's name for the device ("Nvidia GPU (Hopper)", "AMD GPU - gfx942"), when it adds to the model.
    env.xprof_device_type && env.xprof_device_type !== env.device_model
      ? kv("Device type", env.xprof_device_type) : null,
    ...devices.map((d) =>
      kv(
        `  ${d.host} ${d.plane}`,
        [d.model, d.core_count === null ? "" : `${d.core_count} cores`, d.compute_capability ? `compute capability ${d.compute_capability}` : ""].filter(Boolean).join(", "),
      ),
    ),
  );
}

export const overviewPage: PageSpec<OverviewResult> = { rows: 100, render };
