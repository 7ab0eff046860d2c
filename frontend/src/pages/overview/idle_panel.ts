// "Device idle" and "communication" each mean three fractions in the domain: XProf's overview
// divides by step time, XProf's op stats by each device's first-op-to-last-op span, HTA by each
// GPU's first-kernel-to-last-kernel span. The overview shows one headline card per concept (the
// step-time one, XProf's overview number) and this one panel that puts every definition side by
// side with its window, so no page shows two cards of the same name that a user must reconcile.

import { h } from "../../widgets/dom";
import type { ToolResult } from "../../data/types";
import type { PageContext } from "../context";
import { GPU_BREAKDOWN_TOOL } from "../gpu_breakdown/gpu_breakdown_section";
import { type Metric, metricsOf, metricValue } from "../metrics";

interface Definition {
  concept: "Device idle" | "Communication";
  key: string;
  /** Whose number it is and the time it is measured over. */
  source: string;
  window: string;
}

/** Every definition, grouped by concept; the rows a run lacks are left out. */
export const IDLE_DEFINITIONS: readonly Definition[] = [
  { concept: "Device idle", key: "device_idle_of_step_time", source: "XProf overview", window: "each step, averaged over the steps" },
  { concept: "Device idle", key: "device_idle_of_device_time", source: "XProf op stats (IDLE op)", window: "each device from its first op to its last, summed over devices" },
  { concept: "Device idle", key: "device_idle_of_kernel_timeline", source: "HTA temporal breakdown", window: "each GPU from its first kernel to its last, averaged over GPUs (the whole trace)" },
  { concept: "Communication", key: "device_collectives_of_step_time", source: "XProf overview", window: "each step, averaged; collectives hidden under compute not counted" },
  { concept: "Communication", key: "collectives_of_device_op_time", source: "XProf op stats", window: "busy device time only (idle excluded), summed over devices" },
  { concept: "Communication", key: "communication_of_kernel_timeline", source: "HTA temporal breakdown", window: "each GPU from its first kernel to its last, overlapped or not, averaged over GPUs" },
];

const WHY = "The windows differ: a step leaves out the time between steps and before the first one, "
  + "an op span or kernel span leaves out the host-only start and end of the trace, and HTA "
  + "counts communication even where compute hides it.";
const HEADLINE = " The headline cards above are XProf's step-time numbers.";

function row(d: Definition, m: Metric): HTMLElement {
  return h(
    "tr",
    { "data-metric": m.key, title: m.definition },
    h("td", {}, d.concept),
    h("td", {}, `${m.label}, ${m.of}`),
    h("td", {}, d.source),
    h("td", {}, d.window),
    h("td", { class: "tbp-num", "data-metric-value": "" }, metricValue(m)),
  );
}

/** The definitions the run has a value for (a metric that could not be determined is left out). */
function shown(metrics: ReadonlyMap<string, Metric>): [Definition, Metric][] {
  return IDLE_DEFINITIONS.flatMap((d): [Definition, Metric][] => {
    const m = metrics.get(d.key);
    return m && m.valuePercent !== null ? [[d, m]] : [];
  });
}

function table(metrics: ReadonlyMap<string, Metric>): HTMLElement {
  const rows = shown(metrics).map(([d, m]) => row(d, m));
  return h(
    "table",
    { class: "tbp-static-table tbp-idle-table" },
    h("thead", {}, h("tr", {}, ["Concept", "Measure", "Whose", "Window", "Value"].map((t) => h("th", {}, t)))),
    h("tbody", {}, rows),
  );
}

/**
 * The panel: the overview's own metrics at once, HTA's rows when the run has its GPU breakdown
 * (fetched after the page is drawn; `data-gpu-breakdown` says when it arrived).
 */
export function idlePanel(ctx: PageContext, own: ReadonlyMap<string, Metric>): HTMLElement | null {
  const hasHta = ctx.run.tools.includes(GPU_BREAKDOWN_TOOL);
  if (shown(own).length === 0 && !hasHta) return null;
  const metrics = new Map(own);
  const holder = h("div", {}, table(metrics));
  const box = h(
    "section",
    { class: "tbp-section", "data-section": "idle_panel" },
    h("h2", {}, "Device idle and communication, by definition"),
    h("p", { class: "tbp-note" }, WHY + (own.has("device_idle_of_step_time") ? HEADLINE : "")),
    holder,
  );
  if (!hasHta) return box;
  box.setAttribute("data-gpu-breakdown", "loading");
  const link = h("a", { class: "tbp-link", href: ctx.href(GPU_BREAKDOWN_TOOL), "data-gpu-breakdown-link": "" },
    "GPU breakdown: per-rank time, idle causes, kernel types");
  link.addEventListener("click", (e) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    ctx.navigate(GPU_BREAKDOWN_TOOL);
  });
  box.appendChild(h("p", {}, link));
  const host = ctx.run.hosts.length > 1 ? ctx.allHosts : (ctx.request.host ?? ctx.run.hosts[0] ?? null);
  ctx.api
    .data({ run: ctx.request.run, host, tool: GPU_BREAKDOWN_TOOL, options: {} }, 0, ctx.signal)
    .then((result: ToolResult) => {
      const hta = metricsOf(result.raw);
      for (const [k, m] of hta) metrics.set(k, m);
      if (![...hta.values()].some((m) => m.valuePercent !== null)) {
        // No GPU kernel timeline (a CPU-only run whose kind could have one): no HTA rows and no
        // link to a breakdown of nothing; without rows of its own the panel goes too.
        link.remove();
        box.setAttribute("data-gpu-breakdown", "none");
        if (shown(metrics).length === 0) box.remove();
        return;
      }
      holder.replaceChildren(table(metrics));
      box.setAttribute("data-gpu-breakdown", "ready");
    })
    .catch((e: unknown) => {
      if (ctx.signal.aborted) return;
      holder.appendChild(h("p", { class: "tbp-note" }, `HTA's breakdown is unavailable: ${e instanceof Error ? e.message : String(e)}`));
      box.setAttribute("data-gpu-breakdown", "error");
    });
  return box;
}
