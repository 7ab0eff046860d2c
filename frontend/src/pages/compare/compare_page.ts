// compare: a baseline and a candidate profile side by side. The shell's Run and Host pick the
// candidate; the page picks the baseline (URL "c.base_run", "c.base_host") and optional step
// selections. It shows the verdict, summary cards with the deltas, the two step-time series
// overlaid, the breakdown side by side and the joined tables (Δ columns, filters, CSV), whose
// op and kernel rows link into both runs' trace viewers at that op.

import { formatBytes, formatDuration, formatNumber, formatPercent } from "../../base/format";
import { newestFirst } from "../../base/search";
import { RUN_PAGE, tableQueryParams } from "../../data/api";
import { compareResult, decodeTable, decodeToolResult } from "../../data/decode";
import type { CompareResult, StepSeriesPair } from "../../data/schema.gen";
import type { RunInfo, TableData, ToolResult } from "../../data/types";
import { type Card, cardRow } from "../../widgets/cards";
import { axisLabel, PALETTE, unitFormatter } from "../../widgets/chart";
import { clear, h } from "../../widgets/dom";
import { loading, messageBox } from "../../widgets/message";
import { DataTable } from "../../widgets/table";
import { viewFromParams, viewToUpdates } from "../../widgets/table_model";
import { chart, hiddenColumns } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import {
  compareParams,
  defaultBaseline,
  deltaTone,
  directionTone,
  intervalText,
  PARAM,
  pickHost,
  runFolder,
  type Side,
  signedPercent,
  swappedHref,
  traceHref,
} from "./compare_model";

const PAGE_SIZE = 50;
const TABLES: readonly [string, string, string][] = [
  ["breakdown", "Step breakdown", "Time per step in each category, and its share of the step time."],
  ["op_types", "Op types", "Framework ops grouped by type; rows ordered by their contribution to the step-time change."],
  ["ops", "Ops", "Framework ops joined by name; rows ordered by |Δ per step|. Links open each run's trace viewer at the op."],
  ["kernels", "GPU kernels", "Kernels joined by name, op and launch configuration."],
  ["trace_diff", "Ops and kernels (HTA trace diff)", "HTA's TraceDiff: every operator and kernel of the first rank's first iteration, by count and total time; added, deleted, increased, decreased or unchanged count."],
  ["memory_allocators", "Memory: allocators", "Peak memory in use and fragmentation at the peak of each allocator."],
  ["allocations", "Memory: allocations at the peak", "Allocations live at each peak, the ones that appear or grow most first."],
  ["steps", "Steps", "Step times of both sides by position."],
];

// The input category's two parts, listed after the main categories in the breakdown table.
const INPUT_PARTS = new Set(["host_wait_input_ms", "host_to_device_ms"]);
// A table cell or a nullable number of the answer (null: NaN on the backend) as a number.
const num = (v: unknown): number => (typeof v === "number" ? v : Number.NaN);

function sideLabel(s: Side, allHosts: string): string {
  const host = s.host === allHosts ? "all hosts" : (s.host ?? "");
  return `${s.run}${host ? ` · ${host}` : ""}${s.steps ? ` · steps ${s.steps}` : ""}`;
}

function render(ctx: PageContext): Promise<void> {
  const allHosts = ctx.allHosts;
  const cand: Side = { run: ctx.run.name, host: ctx.request.host, steps: ctx.param(PARAM.steps) ?? "" };
  const el = ctx.el;
  el.classList.add("tbp-compare");
  el.appendChild(
    h("div", { class: "tbp-page-title" }, h("h1", {}, "Compare"), h("span", { class: "tbp-muted" }, "baseline → candidate")),
  );
  const pick = h("section", { class: "tbp-compare-pick", "data-testid": "compare-pick" });
  const content = h("div", { class: "tbp-compare-content" });
  el.append(pick, content);
  content.appendChild(loading("runs"));

  const urlRun = ctx.param(PARAM.baseRun);
  return baselineChoices(ctx, cand.run, urlRun).then((runs) => {
    // The runs can arrive after the page was left (their fetch done, its abort too late): the
    // page element is the next page's by then.
    if (ctx.signal.aborted) return;
    const byName = new Map(runs.map((r) => [r.name, r]));
    // No related run to default to: run "" until the user picks one (nothing is compared).
    let base: Side =
      urlRun !== null && byName.has(urlRun)
        ? { run: urlRun, host: ctx.param(PARAM.baseHost), steps: ctx.param(PARAM.baseSteps) ?? "" }
        : (defaultBaseline(runs, cand) ?? { run: "", host: null, steps: "" });
    base = { ...base, host: pickHost(byName.get(base.run), base.host, allHosts) };
    let generation = 0;

    const save = (): void =>
      ctx.setParams({
        [PARAM.baseRun]: base.run || null,
        [PARAM.baseHost]: base.host,
        [PARAM.baseSteps]: base.steps || null,
        [PARAM.steps]: cand.steps || null,
      });

    const reload = (): void => {
      save();
      drawPicker();
      const gen = ++generation;
      if (!base.run) {
        clear(content);
        content.appendChild(messageBox({
          title: "Choose a baseline",
          body: "No earlier session of this run (same run folder, same kind, same hosts or ranks) to compare with: pick the baseline above.",
        }));
        content.firstElementChild?.setAttribute("data-no-baseline", "");
        return;
      }
      void drawComparison(ctx, content, base, cand, () => gen !== generation);
    };

    const drawPicker = (): void => {
      clear(pick);
      const runSelect = h("select", { "data-pick": "base-run", "aria-label": "Baseline run" });
      if (!base.run) runSelect.appendChild(h("option", { value: "", selected: true, disabled: true }, "— choose a baseline —"));
      for (const r of runs) {
        const opt = h("option", { value: r.name }, r.name);
        if (r.name === base.run) opt.selected = true;
        runSelect.appendChild(opt);
      }
      const baseRun = byName.get(base.run);
      const hostSelect = h("select", { "data-pick": "base-host", "aria-label": "Baseline host" });
      const hosts = baseRun?.hosts ?? [];
      if (hosts.length > 1) hostSelect.appendChild(h("option", { value: allHosts }, `All hosts (${hosts.length})`));
      for (const host of hosts) hostSelect.appendChild(h("option", { value: host }, host));
      hostSelect.value = base.host ?? "";
      hostSelect.disabled = hosts.length <= 1;
      const baseSteps = h("input", {
        type: "text", "data-pick": "base-steps", size: 8, placeholder: "all steps", value: base.steps,
        title: "Baseline steps by step number: 3:6, 2,4 or 5:", "aria-label": "Baseline steps",
      });
      const candSteps = h("input", {
        type: "text", "data-pick": "steps", size: 8, placeholder: "all steps", value: cand.steps,
        title: "Candidate steps by step number: 3:6, 2,4 or 5:", "aria-label": "Candidate steps",
      });
      runSelect.addEventListener("change", () => {
        base = { run: runSelect.value, host: pickHost(byName.get(runSelect.value), base.host, allHosts), steps: "" };
        reload();
      });
      hostSelect.addEventListener("change", () => {
        base = { ...base, host: hostSelect.value };
        reload();
      });
      baseSteps.addEventListener("change", () => {
        base = { ...base, steps: baseSteps.value.trim() };
        reload();
      });
      candSteps.addEventListener("change", () => {
        cand.steps = candSteps.value.trim();
        reload();
      });
      pick.append(
        h("label", { class: "tbp-field" }, h("span", {}, "Baseline"), runSelect),
        h("label", { class: "tbp-field" }, h("span", {}, "host"), hostSelect),
        h("label", { class: "tbp-field" }, h("span", {}, "steps"), baseSteps),
        h("span", { class: "tbp-compare-arrow", "aria-hidden": "true" }, "→"),
        h("span", { class: "tbp-field" }, h("span", {}, "Candidate"), h("strong", { "data-pick": "candidate" }, sideLabel({ ...cand, steps: "" }, allHosts))),
        h("label", { class: "tbp-field" }, h("span", {}, "steps"), candSteps),
        base.run ? h("a", { class: "tbp-btn", href: swappedHref(base, cand), "data-action": "swap", title: "Make the baseline the candidate and back" }, "⇄ Swap") : "",
      );
    };
    reload();
  });
}

/**
 * The runs the baseline picker offers, newest first, without asking for the whole list (it can
 * be 20,000 runs): the newest page, the newest page of the candidate's experiment (its folder,
 * where the default baseline comes from), the candidate, and the URL's baseline looked up by name.
 */
async function baselineChoices(ctx: PageContext, candidate: string, urlRun: string | null): Promise<RunInfo[]> {
  const folder = runFolder(candidate);
  const pages = [ctx.api.runs({ offset: 0, limit: RUN_PAGE, q: "", refresh: false }, ctx.signal)];
  if (folder !== "") pages.push(ctx.api.runs({ offset: 0, limit: RUN_PAGE, q: `${folder}/`, refresh: false }, ctx.signal));
  const byName = new Map<string, RunInfo>([[ctx.run.name, ctx.run]]);
  for (const page of await Promise.all(pages)) for (const r of page.runs) byName.set(r.name, r);
  if (urlRun !== null && !byName.has(urlRun)) {
    const found = await ctx.api.run(urlRun, ctx.signal);
    if (found !== null) byName.set(found.name, found);
  }
  return newestFirst([...byName.values()].filter((r) => r.hosts.length > 0));
}

async function drawComparison(
  ctx: PageContext,
  content: HTMLElement,
  base: Side,
  cand: Side,
  stale: () => boolean,
): Promise<void> {
  clear(content);
  content.appendChild(loading(`comparison of ${sideLabel(base, ctx.allHosts)} and ${sideLabel(cand, ctx.allHosts)}`));
  const params = compareParams(base, cand);
  let result: ToolResult<CompareResult>;
  try {
    result = compareResult(decodeToolResult(await ctx.api.getJson("compare", [...params, ["rows", String(PAGE_SIZE)]], ctx.signal)));
  } catch (e) {
    if (stale() || (e instanceof DOMException && e.name === "AbortError")) return;
    clear(content);
    content.appendChild(
      messageBox({ kind: "error", title: "The comparison failed", body: e instanceof Error ? e.message : String(e) }),
    );
    return;
  }
  if (stale()) return;
  clear(content);
  // The compare route's answer, typed (CompareResult, generated from analyses/results/compare.py).
  const raw = result.raw;
  const kind = raw.verdict.kind;
  content.appendChild(
    h(
      "div",
      { class: `tbp-compare-verdict tbp-tone-${directionTone(kind)}`, "data-verdict": kind, role: "status" },
      h("strong", {}, "Verdict: "),
      raw.verdict.summary,
    ),
  );
  content.appendChild(summaryCards(raw, result.tables));
  // The backend's warnings (few ops on both sides): before anything else is read as a comparison.
  const warnings = raw.warnings;
  if (warnings.length) {
    const box = messageBox({ title: "These profiles have little in common", body: warnings.map((w) => h("p", {}, w)) });
    box.classList.add("tbp-tone-warn");
    box.dataset.compareWarning = "";
    content.appendChild(box);
  }
  const unavailable = Object.entries(raw.unavailable);
  const notes = raw.notes;
  if (unavailable.length || notes.length) {
    content.appendChild(
      messageBox({
        title: "Not everything could be compared",
        body: h(
          "ul",
          { "data-testid": "compare-notes" },
          unavailable.map(([k, v]) => h("li", {}, `${k.replace(/_/g, " ")}: ${v}`)),
          notes.map((n) => h("li", {}, n)),
        ),
      }),
    );
  }
  const charts = h("div", { class: "tbp-grid-2" });
  content.appendChild(charts);
  drawStepChart(ctx, charts, raw.step_time_series, base, cand);
  if (result.tables.breakdown) drawBreakdownChart(ctx, charts, result.tables.breakdown);

  // The trace viewer shows one host: the side's first.
  const baseTrace = { run: base.run, host: raw.baseline.hosts[0] ?? null };
  const candTrace = { run: cand.run, host: raw.candidate.hosts[0] ?? null };
  for (const [name, title, description] of TABLES) {
    const initial = result.tables[name];
    if (!initial) continue;
    content.appendChild(compareTable(ctx, name, title, description, initial, params, baseTrace, candTrace, base, cand).el);
  }
}

function summaryCards(raw: CompareResult, tables: Record<string, TableData>): HTMLElement {
  const cards: Card[] = [];
  const st = raw.step_time;
  if (st !== null) {
    const b = st.baseline;
    const c = st.candidate;
    const ch = st.change;
    const dir = ch.direction;
    cards.push({
      id: "step_time",
      label: "Median step time",
      value: `${formatDuration(num(b.median_ms), "ms")} → ${formatDuration(num(c.median_ms), "ms")}`,
      hint: `p10–p90 ${formatDuration(num(b.p10_ms), "ms")}–${formatDuration(num(b.p90_ms), "ms")} → ${formatDuration(num(c.p10_ms), "ms")}–${formatDuration(num(c.p90_ms), "ms")}`,
    });
    cards.push({
      id: "change",
      label: "Step time change",
      value: signedPercent(ch.change_percent),
      hint: `${intervalText(ch)} · ${dir}`,
      tone: directionTone(dir),
    });
    cards.push({
      id: "spread",
      label: "Step-to-step stddev",
      value: `${formatDuration(num(b.stddev_ms), "ms")} → ${formatDuration(num(c.stddev_ms), "ms")}`,
      hint: `${formatNumber(b.count)} → ${formatNumber(c.count)} steps`,
    });
  } else {
    cards.push({ id: "step_time", label: "Step time", value: "not compared", tone: "warn" });
  }
  const bd = tables.breakdown;
  if (bd) {
    const col = (n: string): number => bd.columns.findIndex((c) => c.name === n);
    const iDelta = col("delta_percent_points");
    const mainRows = bd.rows.filter((r) => !INPUT_PARTS.has(String(r[col("category")])));
    const top = mainRows.reduce<(typeof mainRows)[number] | null>(
      (best, r) => (best === null || Math.abs(num(r[iDelta])) > Math.abs(num(best[iDelta])) ? r : best),
      null,
    );
    if (top) {
      cards.push({
        id: "category",
        label: `Largest shift: ${String(top[col("label")])}`,
        value: `${formatPercent(num(top[col("base_percent")]))} → ${formatPercent(num(top[col("cand_percent")]))}`,
        hint: `of step time (${num(top[iDelta]) >= 0 ? "+" : ""}${formatNumber(num(top[iDelta]), 3)} pp)`,
      });
    }
  }
  const mem = tables.memory_allocators;
  if (mem && mem.rows.length) {
    const col = (n: string): number => mem.columns.findIndex((c) => c.name === n);
    const row = mem.rows.reduce((best, r) =>
      Math.max(num(r[col("base_peak_bytes")]) || 0, num(r[col("cand_peak_bytes")]) || 0) >
      Math.max(num(best[col("base_peak_bytes")]) || 0, num(best[col("cand_peak_bytes")]) || 0)
        ? r
        : best,
    );
    const d = num(row[col("delta_peak_bytes")]);
    cards.push({
      id: "memory",
      label: `Peak memory (${String(row[col("memory_id")])})`,
      value: `${formatBytes(num(row[col("base_peak_bytes")]))} → ${formatBytes(num(row[col("cand_peak_bytes")]))}`,
      hint: `fragmentation ${formatPercent(100 * num(row[col("base_peak_fragmentation_fraction")]))} → ${formatPercent(100 * num(row[col("cand_peak_fragmentation_fraction")]))}`,
      tone: d > 0 ? "warn" : "neutral",
    });
  }
  const ops = tables.ops;
  if (ops) {
    const o = raw.overlap.ops;
    cards.push({
      id: "ops",
      label: "Ops on both sides",
      value: formatNumber(o === undefined ? ops.totalRows : o.both),
      hint: o === undefined
        ? "added and removed ones in the Status column"
        : `of ${formatNumber(o.baseline)} (baseline) and ${formatNumber(o.candidate)} (candidate)`,
    });
  }
  return cardRow(cards, { oneRow: true });
}

function drawStepChart(ctx: PageContext, parent: HTMLElement, steps: StepSeriesPair, base: Side, cand: Side): void {
  const b = steps.baseline.step_time_ms.map(num);
  const c = steps.candidate.step_time_ms.map(num);
  const box = h("div", { class: "tbp-panel" }, h("h2", {}, "Step time, overlaid"));
  parent.appendChild(box);
  if (b.length === 0 && c.length === 0) {
    box.appendChild(h("p", { class: "tbp-muted" }, "Neither side has steps."));
    return;
  }
  const n = Math.max(b.length, c.length);
  const chartEl = chart(ctx, box, { label: "Step time of baseline and candidate by step position", id: "compare_step_time", height: 280 });
  const median = (v: number[]): number => {
    const s = [...v].sort((x, y) => x - y);
    const m = s.length >> 1;
    return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
  };
  const line = (name: string, values: number[], color: string): Record<string, unknown> => ({
    type: "line",
    name,
    data: values,
    symbolSize: 6,
    color,
    markLine: values.length
      ? { silent: true, symbol: "none", label: { formatter: "median", position: "insideEndTop" }, lineStyle: { type: "dashed", color }, data: [{ yAxis: median(values) }] }
      : undefined,
  });
  chartEl.setOption({
    grid: { left: 8, right: 24, top: 48, bottom: 28, containLabel: true },
    legend: { top: 0, type: "scroll" },
    tooltip: { trigger: "axis", valueFormatter: unitFormatter("ms") },
    xAxis: { type: "category", name: "step #", nameLocation: "middle", nameGap: 24, data: Array.from({ length: n }, (_, i) => String(i + 1)) },
    yAxis: { type: "value", axisLabel: { formatter: axisLabel("ms") }, scale: true },
    series: [
      line(`baseline: ${sideLabel(base, ctx.allHosts)}`, b, PALETTE[0] ?? "#4e79a7"),
      line(`candidate: ${sideLabel(cand, ctx.allHosts)}`, c, PALETTE[1] ?? "#f28e2b"),
    ],
  });
}

function drawBreakdownChart(ctx: PageContext, parent: HTMLElement, bd: TableData): void {
  const col = (n: string): number => bd.columns.findIndex((c) => c.name === n);
  const rows = bd.rows.filter(
    (r) => !INPUT_PARTS.has(String(r[col("category")])) && (num(r[col("base_ms")]) > 0 || num(r[col("cand_ms")]) > 0),
  );
  const box = h("div", { class: "tbp-panel" }, h("h2", {}, "Step breakdown (per step)"));
  parent.appendChild(box);
  const c = chart(ctx, box, { label: "Step time per category, baseline and candidate", id: "compare_breakdown", height: Math.max(200, 40 * rows.length + 70) });
  const labels = rows.map((r) => String(r[col("label")]));
  c.setOption({
    grid: { left: 8, right: 24, top: 36, bottom: 24, containLabel: true },
    legend: { top: 0 },
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, valueFormatter: unitFormatter("ms") },
    xAxis: { type: "value", axisLabel: { formatter: axisLabel("ms") } },
    yAxis: { type: "category", data: labels, axisLabel: { width: 200, overflow: "truncate" } },
    series: [
      { type: "bar", name: "baseline", color: PALETTE[0], data: rows.map((r) => num(r[col("base_ms")])) },
      { type: "bar", name: "candidate", color: PALETTE[1], data: rows.map((r) => num(r[col("cand_ms")])) },
    ],
  });
}

function compareTable(
  ctx: PageContext,
  name: string,
  title: string,
  description: string,
  initial: TableData,
  params: [string, string][],
  baseTrace: { run: string; host: string | null },
  candTrace: { run: string; host: string | null },
  base: Side,
  cand: Side,
): DataTable {
  let view = viewFromParams(ctx.tableParams(name));
  const linkCol = name === "ops" ? "operation" : name === "kernels" ? "kernel_name" : null;
  const safe = (s: string): string => s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "");
  const widget = new DataTable({
    name,
    title,
    description,
    initial,
    view,
    pageSize: PAGE_SIZE,
    fetchRows: async (q, signal) =>
      decodeTable(
        await ctx.api.getJson("compare_table", [...params, ["table", name], ...tableQueryParams(q)], signal),
        `table ${name}`,
      ),
    onViewChange: (next) => {
      ctx.setTableParams(viewToUpdates(`${name}.`, view, next));
      view = next;
    },
    ...hiddenColumns(ctx, name),
    // The breakdown's "category" (device_compute_ms, ...) is the backend's key of the category
    // the next column names in words.
    omitColumns: name === "breakdown" ? ["category"] : [],
    csvName: safe(`compare_${base.run}_vs_${cand.run}_${name}`),
    fullCsvUrl: (q) => ctx.api.url("compare_csv", [...params, ["table", name], ...tableQueryParams(q, false)]).href,
    decorateCell: (td, row, i) => {
      // The columns of a table never change with its view: the first page's describe every page.
      const column = initial.columns[i];
      if (!column) return;
      const tone = deltaTone(column.name, column.unit, row[i]);
      if (tone !== "neutral") td.classList.add(`tbp-delta-${tone}`);
      if (linkCol !== null && column.name === linkCol && typeof row[i] === "string") {
        const statusIdx = initial.columns.findIndex((c) => c.name === "status");
        const status = statusIdx >= 0 ? row[statusIdx] : "both";
        const query = row[i];
        const links = h("span", { class: "tbp-compare-links" });
        if (status !== "added") {
          links.appendChild(h("a", { href: traceHref(baseTrace.run, baseTrace.host, query), "data-link": "trace-base", title: `Baseline trace viewer at ${query}` }, "trace: baseline"));
        }
        if (status !== "removed") {
          links.appendChild(h("a", { href: traceHref(candTrace.run, candTrace.host, query), "data-link": "trace-cand", title: `Candidate trace viewer at ${query}` }, "trace: candidate"));
        }
        td.appendChild(links);
      }
    },
  });
  ctx.onDispose(() => widget.dispose());
  return widget;
}

export const comparePage: PageSpec = { everyRun: true, title: "Compare", ownData: true, multiHost: true, render };
