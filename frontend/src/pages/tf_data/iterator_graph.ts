// The ECharts option of a tf.data pipeline's iterator graph (the tree of iterator_tree.ts, the
// bottleneck in red, the critical path in bold). DOM-free, so a test draws it with ECharts.

import { formatDuration, formatNumber } from "../../base/format";
import { html, joinHtml, tooltipHtml } from "../../base/html";
import { layoutTree, shortName } from "./iterator_tree";

/** One iterator of a pipeline, from the result's "iterators" table. */
export interface IteratorRow {
  name: string;
  kind: string;
  totalMs: number;
  selfMs: number;
  calls: number;
  avgUs: number;
  critical: boolean;
}

/** The option, and the tree's number of rows (the chart's height follows it). */
export function iteratorGraph(iterators: readonly IteratorRow[], bottleneck: string, criticalPath: readonly string[]): { option: Record<string, unknown>; rows: number } {
  const critical = new Set(criticalPath);
  const nodes = layoutTree(iterators.map((it) => it.name));
  const byName = new Map(iterators.map((it) => [it.name, it]));
  const rows = Math.max(0, ...nodes.map((n) => n.row)) + 1;
  const option = {
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: tooltipHtml((params: unknown) => {
        const d = (params as { data?: { id?: string } } | null)?.data;
        const it = d?.id !== undefined ? byName.get(d.id) : undefined;
        if (!it) return html``;
        return joinHtml([
          html`<b>${it.kind || shortName(it.name)}</b>`,
          it.name,
          `${formatNumber(it.calls)} calls, avg ${formatDuration(it.avgUs, "us")}`,
          `total ${formatDuration(it.totalMs, "ms")}, self ${formatDuration(it.selfMs, "ms")}`,
          it.name === bottleneck ? html`<b>bottleneck</b>` : it.critical ? "on the critical path" : "",
        ].filter((x) => x !== ""));
      }),
    },
    series: [
      {
        type: "graph",
        layout: "none",
        roam: true,
        symbol: "roundRect",
        symbolSize: [110, 34],
        label: { show: true, formatter: (q: { data?: { label?: string } }) => q.data?.label ?? "", fontSize: 11, overflow: "truncate", width: 104 },
        edgeSymbol: ["none", "arrow"],
        edgeSymbolSize: 7,
        data: nodes.map((n) => {
          const it = byName.get(n.name);
          const isBottleneck = n.name === bottleneck;
          const onPath = critical.has(n.name) || it?.critical === true;
          return {
            id: n.name,
            name: n.name,
            label: shortName(n.name).replace(/\[\d+\]$/, ""),
            x: n.depth * 150,
            y: n.row * 80,
            itemStyle: {
              color: isBottleneck ? "#e15759" : onPath ? "#f28e2b" : "#4e79a7",
              borderColor: onPath ? "#222" : "transparent",
              borderWidth: onPath ? 2 : 0,
            },
          };
        }),
        links: nodes
          .filter((n) => n.parent !== null)
          .map((n) => {
            const bold = critical.has(n.name) && critical.has(n.parent ?? "");
            return { source: n.parent ?? "", target: n.name, lineStyle: { width: bold ? 4 : 1.5, color: bold ? "#f28e2b" : "#999", opacity: 0.9 } };
          }),
      },
    ],
  };
  return { option, rows };
}
