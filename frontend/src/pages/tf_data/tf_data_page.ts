// tf.data bottleneck analysis: per input pipeline, the iterator tree drawn as a graph with the
// bottleneck highlighted and the critical path in bold, XProf's suggestion, and the tables.

import type { TfDataPipeline, TfDataResult } from "../../data/schema.gen";
import { formatDuration, formatNumber, formatPercent } from "../../base/format";
import type { CellValue, TableData } from "../../data/types";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, panel, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";
import { type IteratorRow, iteratorGraph } from "./iterator_graph";
import { shortName } from "./iterator_tree";

function iteratorsOf(t: TableData | undefined, host: string, pipeline: string): IteratorRow[] {
  if (!t) return [];
  const idx = (n: string): number => t.columns.findIndex((c) => c.name === n);
  const [ih, ip, ii, ik, it, is, ic, ia, icp] = ["host", "pipeline", "iterator", "kind", "total_time_ms", "self_time_ms", "calls", "avg_time_us", "on_critical_path"].map(idx);
  const get = (r: CellValue[], i: number | undefined): CellValue => (i === undefined || i < 0 ? null : (r[i] ?? null));
  const n = (v: CellValue): number => (typeof v === "number" ? v : 0);
  return t.rows
    .filter((r) => get(r, ih) === host && get(r, ip) === pipeline)
    .map((r) => ({
      name: String(get(r, ii) ?? ""),
      kind: String(get(r, ik) ?? ""),
      totalMs: n(get(r, it)),
      selfMs: n(get(r, is)),
      calls: n(get(r, ic)),
      avgUs: n(get(r, ia)),
      critical: get(r, icp) === true,
    }));
}

function render(ctx: PageContext<TfDataResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "tf.data bottleneck analysis"));
  const pipelines = raw.pipelines;
  if (pipelines.length === 0) {
    el.appendChild(messageBox({ title: "No tf.data pipelines", body: "No tf.data iterator events were recorded on this host." }));
  }
  pipelines.forEach((p, i) => drawPipeline(ctx, el, p, i, result.tables.iterators));
  const diags = raw.diagnostics;
  if (diags.length) el.appendChild(messageBox({ title: "Notes", body: h("ul", {}, diags.map((d) => h("li", {}, d))) }));
  if (result.tables.pipelines) el.appendChild(tableWidget(ctx, "pipelines", { title: "Pipelines" }).el);
  if (result.tables.iterators) el.appendChild(tableWidget(ctx, "iterators", { title: "Iterators" }).el);
}

function drawPipeline(ctx: PageContext, el: HTMLElement, p: TfDataPipeline, index: number, table: TableData | undefined): void {
  const host = p.host;
  const name = p.pipeline;
  const bottleneck = p.bottleneck;
  el.appendChild(h("h2", { class: "tbp-subtitle" }, `Pipeline ${name}`));
  el.appendChild(
    cardRow([
      { id: `calls_${index}`, label: "GetNext calls of the root", value: formatNumber(p.root_calls), hint: `${formatNumber(p.root_slow_calls)} slow` },
      { id: `latency_${index}`, label: "Average root latency", value: formatDuration(p.root_avg_latency_us, "us") },
      { id: `slow_${index}`, label: "Slow calls", value: formatPercent(p.slow_call_percent), tone: p.slow_call_percent > 50 ? "bad" : "neutral" },
      { id: `bottleneck_${index}`, label: "Bottleneck", value: p.bottleneck_kind || shortName(bottleneck), tone: "warn" },
    ]),
  );
  const suggestion = p.suggestion;
  const hint = p.input_bound_hint;
  if (suggestion || hint) {
    el.appendChild(messageBox({ title: "Suggestion", body: [suggestion, hint].filter(Boolean) }));
  }
  const iterators = iteratorsOf(table, host, name);
  if (iterators.length === 0) return;
  const { option, rows } = iteratorGraph(iterators, bottleneck, p.critical_path);
  const box = panel(el, "Iterator graph (bottleneck in red, critical path in bold)");
  const c = chart(ctx, box, { label: `Iterator graph of ${name}`, id: `tf_data_graph_${index}`, height: Math.max(200, 90 * rows + 60) });
  c.setOption(option);
}

// The graph needs every iterator of every pipeline in the first response.
export const tfDataPage: PageSpec<TfDataResult> = { rows: 5000, render };
