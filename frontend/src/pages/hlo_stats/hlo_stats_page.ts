// HLO op stats: self time by category (pie), the top ops by self time (bars) and every HLO
// op with its FLOP rate, bandwidth and bound-by verdict (table). An op's name opens the graph
// viewer centred on it.

import type { HloStatsResult } from "../../data/schema.gen";
import { formatDuration, formatNumber } from "../../base/format";
import { cardRow } from "../../widgets/cards";
import { h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { chart, pageTitle, panel, pieOption, tableWidget } from "../common";
import type { PageContext } from "../context";
import type { PageSpec } from "../registry";

/** A link that opens the graph viewer on an HLO op of a program. */
export function graphLink(ctx: PageContext, op: string, programId: string, label: string = op): HTMLElement {
  const params = { node: op, module: programId };
  const a = h("a", { href: ctx.href("graph_viewer", params), class: "tbp-link", "data-graph-link": op }, label);
  a.addEventListener("click", (e) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    ctx.navigate("graph_viewer", params);
  });
  return a;
}

function render(ctx: PageContext<HloStatsResult>): void {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  el.appendChild(pageTitle(ctx, "HLO op stats"));
  const message = raw.message;
  if (message) el.appendChild(messageBox({ title: "No HLO ops", body: message }));
  el.appendChild(
    cardRow([
      { id: "ops", label: "HLO ops", value: formatNumber(raw.op_count), hint: `${formatNumber(raw.device_count)} device(s)` },
      { id: "self", label: "Op self time", value: formatDuration(raw.total_self_time_us, "us") },
      { id: "span", label: "Device time (idle included)", value: formatDuration(raw.total_time_us, "us") },
    ]),
  );
  const grid = h("div", { class: "tbp-grid-2" });
  el.appendChild(grid);
  const pie = panel(grid, "Self time by HLO category");
  const slices = raw.self_time_by_category.map((o) => ({ name: o.category, value: o.total_self_time_us }));
  chart(ctx, pie, { label: "Self time by HLO category", id: "hlo_category_pie", height: 300 }).setOption(pieOption(slices, "us"));
  const barBox = panel(grid, "Top ops by self time");
  const top = raw.top_ops_by_self_time.slice().reverse();
  chart(ctx, barBox, { label: "Top HLO ops by self time", id: "hlo_top_ops", height: 300 }).setOption({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
    grid: { left: 160, right: 24, top: 8, bottom: 32 },
    xAxis: { type: "value", name: "µs" },
    yAxis: { type: "category", data: top.map((o) => o.hlo_op_name), axisLabel: { width: 150, overflow: "truncate" } },
    series: [{ type: "bar", name: "Self time (µs)", data: top.map((o) => o.total_self_time_us) }],
  });
  if (result.tables.hlo_ops) {
    const table = result.tables.hlo_ops;
    const nameCol = table.columns.findIndex((c) => c.name === "hlo_op_name");
    const programCol = table.columns.findIndex((c) => c.name === "program_id");
    const tfOpCol = table.columns.findIndex((c) => c.name === "tf_op_name");
    el.appendChild(
      tableWidget(ctx, "hlo_ops", {
        title: "HLO ops",
        decorateCell: (td, row, column) => {
          if (column === tfOpCol) {
            // XProf's "name:type" with no type: the trailing ":" is noise; the CSV keeps it.
            const fw = row[tfOpCol];
            if (typeof fw === "string" && fw.endsWith(":")) td.textContent = fw.slice(0, -1);
            return;
          }
          if (column !== nameCol || programCol < 0) return;
          const op = row[nameCol];
          const program = row[programCol];
          if (typeof op !== "string" || typeof program !== "string") return;
          td.textContent = "";
          td.appendChild(graphLink(ctx, op, program));
        },
      }).el,
    );
  }
}

export const hloStatsPage: PageSpec<HloStatsResult> = { render };
