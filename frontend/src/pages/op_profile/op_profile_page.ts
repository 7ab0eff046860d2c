// Op profile: the ops as an expandable tree — by category, by name scope or by XLA program —
// with each node's self/total time, share of the total, FLOP rate and memory bandwidth.
// The backend's filters (side, order, depth, minimum self time, name regexes, idle) are the
// tool's options in the shell's options bar.

import type { OpNode, OpProfileResult } from "../../data/schema.gen";
import { formatBandwidth, formatBytes, formatDuration, formatNumber, formatPercent } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { TreeTable } from "../../widgets/tree_table";
import { pageTitle, tableWidget } from "../common";
import type { PageContext } from "../context";
import { graphLink } from "../hlo_stats/hlo_stats_page";
import { metricCard, metricsOf } from "../metrics";
import type { PageSpec } from "../registry";
import { boundBy, type DevicePeaks, devicePeaks, OVER_PEAK_NOTE, overPeak, utilization, utilText, wastedUs } from "./op_tree";

type Grouping = "by_category" | "by_name_scope" | "by_program";

const GROUPINGS: readonly [Grouping, string][] = [
  ["by_category", "Category"],
  ["by_name_scope", "Name scope"],
  ["by_program", "XLA program"],
];

function fractionBar(fraction: number): HTMLElement {
  const pct = Math.max(0, Math.min(100, fraction * 100));
  return h("span", { class: "tbp-bar-cell" }, h("span", { class: "tbp-bar-fill", style: `width:${pct.toFixed(1)}%` }), h("span", { class: "tbp-bar-text" }, formatPercent(pct)));
}

function render(ctx: PageContext<OpProfileResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "Op profile"));
  const total = raw.total_time_us;
  const idle = [...metricsOf(raw).values()][0];
  // XProf's headline "Overall GPU FLOPS utilization": the root's FLOPs over peak × its time.
  const rootFlops = raw.by_category.flops_utilization;
  el.appendChild(
    cardRow([
      { id: "side", label: "Side", value: raw.side },
      { id: "total", label: "Total time", value: formatDuration(total, "us") },
      ...(idle ? [metricCard(idle, { id: "idle" })] : []),
      ...(rootFlops !== null ? [{ id: "overall_flops", label: `Overall ${raw.side === "device" ? "device " : ""}FLOP utilization`, value: utilText(rootFlops), hint: "of the peak FLOP/s over the whole time shown", title: "All ops' FLOPs divided by (the device's peak FLOP/s × the total time), as XProf's op profile headline." }] : []),
      { id: "ops", label: "Ops shown", value: `${formatNumber(raw.shown_op_count)} of ${formatNumber(raw.op_count)}`, hint: `ordered by ${raw.order_by.replace(/_/g, " ")}` },
    ]),
  );
  const available = GROUPINGS.filter(([k]) => raw[k] !== null);
  const wanted = ctx.param("group");
  let group: Grouping | undefined = available.find(([k]) => k === wanted)?.[0] ?? available[0]?.[0];
  const select = h("select", { class: "tbp-group-select", "aria-label": "Group by" }, available.map(([k, label]) => h("option", { value: k, selected: k === group }, label)));
  const expand = h("button", { type: "button", class: "tbp-btn" }, "Expand all");
  const collapse = h("button", { type: "button", class: "tbp-btn" }, "Collapse all");
  // Only the children that make up 90 % of their parent's time (XProf's "top 90%"): the
  // backend's top_percent option, so the cut is the one the CSV and the API give too.
  const top90 = h("input", { type: "checkbox", "data-testid": "top90" });
  top90.checked = Number(ctx.request.options.top_percent ?? "100") < 100;
  top90.addEventListener("change", () => ctx.setOptions({ top_percent: top90.checked ? "90" : null }));
  const peaks = devicePeaks(raw);
  const rootUs = raw.total_time_us;
  el.appendChild(h("div", { class: "tbp-toolbar" }, h("label", { class: "tbp-field" }, h("span", {}, "Group by"), select), expand, collapse,
    h("label", { class: "tbp-option", title: "List only the children that make up 90 % of their parent's time" }, top90, " Top 90 %")));
  if (peaks === null) {
    el.appendChild(h("p", { class: "tbp-muted", "data-no-peaks": "" },
      "Utilisation against the device's peaks needs its peak FLOP/s and memory bandwidth, which this profile does not name."));
  }
  const childrenOf = (n: OpNode): OpNode[] => n.children;
  const peakColumns = peaks === null ? [] : [
    { label: "FLOP/s (% of peak)", numeric: true, cell: (n: OpNode) => utilText(utilization(n, peaks).flops) },
    { label: "HBM BW (% of peak)", numeric: true, cell: (n: OpNode) => utilText(utilization(n, peaks).hbm) },
    { label: "Wasted time", numeric: true, cell: (n: OpNode) => {
      const w = wastedUs(n, utilization(n, peaks), rootUs);
      return w === null ? "–" : formatDuration(w, "us");
    } },
  ];
  const holder = h("div", { "data-tree": "" });
  el.appendChild(holder);
  const details = h("section", { class: "tbp-panel tbp-op-details", "data-op-details": "" },
    h("p", { class: "tbp-muted" }, "Click an op to see its details."));
  el.appendChild(details);
  let tree: TreeTable<OpNode> | null = null;
  const draw = (): void => {
    holder.textContent = "";
    const root = group === undefined ? null : raw[group];
    if (!root) return;
    tree = new TreeTable<OpNode>({
      root,
      children: childrenOf,
      name: (n) => n.name,
      title: (n) => [n.kind, n.category && `category ${n.category}`, n.framework_op && `framework op ${n.framework_op}`, n.program && `program ${n.program}`].filter(Boolean).join("\n"),
      openDepth: 1,
      onSelect: (n) => showDetails(ctx, details, n, peaks),
      columns: [
        { label: "Time share", cell: (n) => fractionBar(n.fraction) },
        { label: "Self time", numeric: true, cell: (n) => formatDuration(n.self_time_us, "us") },
        { label: "Total time", numeric: true, cell: (n) => formatDuration(n.total_time_us, "us") },
        { label: "Occurrences", numeric: true, cell: (n) => formatNumber(n.occurrences) },
        { label: "FLOP rate (GFLOP/s)", numeric: true, cell: (n) => formatNumber(n.flop_rate_gflops_per_sec) },
        { label: "Memory BW (GiB/s)", numeric: true, cell: (n) => formatNumber((n.memory_bw_gbytes_per_sec * 1e9) / 2 ** 30) },
        ...peakColumns,
      ],
    });
    holder.appendChild(tree.el);
  };
  select.addEventListener("change", () => {
    group = available.find(([k]) => k === select.value)?.[0] ?? group;
    ctx.setParams({ group: group ?? null });
    draw();
  });
  expand.addEventListener("click", () => tree?.expandAll());
  collapse.addEventListener("click", () => tree?.collapseAll());
  draw();
  if (result.tables.ops) el.appendChild(tableWidget(ctx, "ops", { title: "Ops" }).el);
}

/** The selected node: what it is, its FLOPs and bytes, what bounds it, and a way to its kernels. */
function showDetails(ctx: PageContext, box: HTMLElement, n: OpNode, peaks: DevicePeaks | null): void {
  box.textContent = "";
  const name = n.name;
  const flops = n.flops;
  const bytes = n.bytes_accessed;
  const u = utilization(n, peaks);
  const bound = boundBy(n, peaks);
  const rows: [string, string][] = [
    ["Kind", n.kind || "–"],
    ...(n.category ? [["Category", n.category] as [string, string]] : []),
    ...(n.program ? [["Program", n.program] as [string, string]] : []),
    ...(n.framework_op ? [["Framework op (source)", n.framework_op] as [string, string]] : []),
    ...(n.opcode ? [["Opcode", n.opcode] as [string, string]] : []),
    ...(n.source ? [["Source", n.source] as [string, string]] : []),
    ["Time", `${formatDuration(n.total_time_us, "us")} total, ${formatDuration(n.self_time_us, "us")} self, ${formatNumber(n.occurrences)} times`],
    ["FLOPs", flops > 0 ? formatNumber(flops) : "–"],
    ["Bytes accessed", bytes > 0 ? formatBytes(bytes) : "–"],
    ["FLOPs per byte", flops > 0 && bytes > 0 ? formatNumber(flops / bytes, 3) : "–"],
    ["FLOP rate", `${formatNumber(n.flop_rate_gflops_per_sec)} GFLOP/s${u.flops === null ? "" : ` (${utilText(u.flops)} of peak)`}`],
    ["Memory bandwidth", `${formatBandwidth(n.memory_bw_gbytes_per_sec * 1e9)}${u.hbm === null ? "" : ` (${utilText(u.hbm)} of peak)`}`],
    ["Bound by", bound ?? "– (needs the device's peaks)"],
    ...(overPeak(u) ? [["Note", OVER_PEAK_NOTE] as [string, string]] : []),
  ];
  const trace = h("a", { class: "tbp-link", href: ctx.href("trace_viewer", { q: name }), "data-trace-link": "" }, "Find its events in the trace viewer");
  trace.addEventListener("click", (e) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    ctx.navigate("trace_viewer", { q: name });
  });
  // A device op of an XLA program ("jit_train_step(13929)") opens in the graph viewer too.
  const programId = /\((\d+)\)$/.exec(n.program ?? "")?.[1];
  const graph = n.kind === "op" && programId !== undefined
    ? [" · ", graphLink(ctx, name, programId, "Show it in the graph viewer")] : [];
  box.append(h("h2", {}, name), h("table", { class: "tbp-table tbp-static-table" },
    h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))))), h("p", {}, trace, ...graph));
}

export const opProfilePage: PageSpec<OpProfileResult> = {
  hideOptions: ["top_percent"],
  render,
};
