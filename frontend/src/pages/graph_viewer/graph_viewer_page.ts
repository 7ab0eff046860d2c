// Graph viewer: the HLO graph around one op (operands above, users below), laid out in the
// browser with dagre and drawn as SVG; nodes are filled by self time. Clicking a node
// recentres the graph on it; the DOT text is one click away for scripts.

import type { GraphViewerResult } from "../../data/schema.gen";
import { formatDuration, formatNumber } from "../../base/format";
import { downloadText, h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { pageTitle, panel } from "../common";
import type { PageContext } from "../context";
import { typedResult } from "../../data/decode";
import type { PageSpec } from "../registry";

const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 220;
const NODE_H = 54;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/**
 * A node's fill: from the theme's "cold" (never ran) to its "hot" (the busiest node), as the DOT
 * output colours them white to red; through CSS variables, so dark mode gets dark nodes with
 * light text and a theme switch recolours the drawn graph (#29 §6).
 */
export function heatFill(selfUs: number, maxUs: number): string {
  const pct = Math.round(Math.max(0, Math.min(1, selfUs / (maxUs > 0 ? maxUs : 1))) * 100);
  return `fill: color-mix(in srgb, var(--tbp-graph-hot) ${String(pct)}%, var(--tbp-graph-cold))`;
}

function short(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

async function render(ctx: PageContext<GraphViewerResult>): Promise<void> {
  const result = ctx.result;
  if (!result) return;
  const raw = result.raw;
  const el = ctx.el;
  // Links from other pages carry the op as page state (c.node, c.module): make it the option.
  const wantNode = ctx.param("node");
  const wantModule = ctx.param("module");
  if (wantNode !== null && wantNode !== (ctx.request.options.node_name ?? "")) {
    ctx.setParams({ node: null, module: null });
    ctx.setOptions({ node_name: wantNode, module: wantModule });
    return;
  }
  el.appendChild(pageTitle(ctx, "Graph viewer"));
  const input = h("input", { type: "text", value: raw.node_name, "aria-label": "HLO op", class: "tbp-graph-node" });
  const width = h("input", { type: "number", min: 0, max: 16, value: String(raw.graph_width), "aria-label": "Graph width", class: "tbp-graph-width" });
  const go = h("button", { type: "button", class: "tbp-btn" }, "Show");
  go.addEventListener("click", () => ctx.setOptions({ node_name: input.value.trim() || null, graph_width: width.value || null, module: null }));
  const dot = h("button", { type: "button", class: "tbp-btn", "data-download": "dot" }, "Download DOT");
  dot.addEventListener("click", () => {
    void ctx.api
      .data({ ...ctx.request, options: { ...ctx.request.options, format: "dot" } }, 0, ctx.signal)
      .then((r) => downloadText(typedResult("graph_viewer", r).raw.dot ?? "", `${raw.node_name || "graph"}.dot`, "text/vnd.graphviz"));
  });
  el.appendChild(
    h("div", { class: "tbp-toolbar" },
      h("label", { class: "tbp-field" }, h("span", {}, "HLO op"), input),
      h("label", { class: "tbp-field" }, h("span", {}, "Width (edges)"), width),
      go, dot),
  );
  el.appendChild(h("p", { class: "tbp-muted" },
    `${raw.module} · computation ${raw.computation} · ${formatNumber(raw.nodes.length)} ops`));
  if (raw.truncated) el.appendChild(messageBox({ title: "Graph cut", body: "Only the nearest 2000 ops are shown: lower the width." }));
  const nodes = raw.nodes;
  const edges = raw.edges;
  const box = panel(el, "HLO graph (operands above users; fill = self time)");
  const { layoutGraph } = await import("./layout");
  if (ctx.signal.aborted) return;
  const placed = layoutGraph(
    nodes.map((n) => ({ name: n.name, width: NODE_W, height: NODE_H })),
    edges.map((e) => ({ from: e.from, to: e.to })),
  );
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const maxUs = Math.max(0, ...nodes.map((n) => n.self_time_us));
  const root = svg("svg", { class: "tbp-graph", width: placed.width, height: placed.height, viewBox: `0 0 ${placed.width} ${placed.height}`, role: "img", "aria-label": "HLO graph" });
  const defs = svg("defs", {});
  const marker = svg("marker", { id: "tbp-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" });
  marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "currentColor" }));
  defs.appendChild(marker);
  root.appendChild(defs);
  for (const e of placed.edges) {
    if (e.points.length < 2) continue;
    const d = e.points.map((p, i) => `${i ? "L" : "M"} ${p.x} ${p.y}`).join(" ");
    root.appendChild(svg("path", { d, fill: "none", stroke: "currentColor", "stroke-opacity": 0.5, "marker-end": "url(#tbp-arrow)", "data-edge": `${e.from}>${e.to}` }));
  }
  for (const p of placed.nodes) {
    const n = byName.get(p.name);
    if (!n) continue;
    const selfUs = n.self_time_us;
    const g = svg("g", { class: "tbp-graph-node", transform: `translate(${p.x},${p.y})`, "data-node": p.name, tabindex: 0, role: "button" });
    const rect = svg("rect", { width: p.width, height: p.height, rx: 4, style: heatFill(selfUs, maxUs), stroke: n.center ? "#1a73e8" : "#888", "stroke-width": n.center ? 3 : 1 });
    const title = svg("title", {});
    title.textContent = `${p.name}\n${n.opcode} ${n.shape}\n${n.framework_op}\nself time ${formatDuration(selfUs, "us")}`;
    g.appendChild(title);
    g.appendChild(rect);
    const lines = [short(p.name, 30), short(`${n.opcode} ${n.shape}`, 34), selfUs > 0 ? formatDuration(selfUs, "us") : ""];
    lines.forEach((text, i) => {
      const t = svg("text", { x: 8, y: 16 + i * 15, "font-size": 12, style: "fill: var(--tbp-fg)" });
      t.textContent = text;
      g.appendChild(t);
    });
    const recentre = (): void => ctx.setOptions({ node_name: p.name, module: raw.program_id });
    g.addEventListener("click", recentre);
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") recentre();
    });
    root.appendChild(g);
  }
  box.appendChild(h("div", { class: "tbp-graph-scroll", style: "overflow:auto;max-height:70vh" }, root));
}

export const graphViewerPage: PageSpec<GraphViewerResult> = { render, hideOptions: ["node_name", "graph_width", "module", "format"] };
