// Graph viewer: the HLO graph around one op (operands above, users below), laid out in the
// browser with dagre and drawn as SVG; nodes are filled by self time and sized to their text.
// As XProf's page: a module picker (by device time), a searchable op picker, a metadata panel
// for the selected node (its HLO text and, for a fusion, its body) and the module's HLO text.
// A click selects a node; a double click (or Enter, or "Centre here") recentres the graph.

import { formatDuration, formatNumber } from "../../base/format";
import { downloadText, h } from "../../widgets/dom";
import { messageBox } from "../../widgets/message";
import { pageTitle, panel } from "../common";
import type { PageContext } from "../context";
import { typedResult } from "../../data/decode";
import type { GraphNode, GraphViewerResult } from "../../data/schema.gen";
import type { PageSpec } from "../registry";
import type { Measure } from "./layout";

const SVG = "http://www.w3.org/2000/svg";
const FONT_PX = 12;
const LINE_PX = 15;
const PAD_PX = 8;
const MIN_NODE_PX = 120;
const MAX_NODE_PX = 320;
const MIN_SCALE = 0.85;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/**
 * A node's fill: from the theme's "cold" (never ran) to its "hot" (the busiest node), as the DOT
 * output colours them white to red; through CSS variables, so dark mode gets dark nodes with
 * light text and a theme switch recolours the drawn graph.
 */
export function heatFill(selfUs: number, maxUs: number): string {
  const pct = Math.round(Math.max(0, Math.min(1, selfUs / (maxUs > 0 ? maxUs : 1))) * 100);
  return `fill: color-mix(in srgb, var(--tbp-graph-hot) ${String(pct)}%, var(--tbp-graph-cold))`;
}

/** Text width in the node font (the page's own font family, read once). */
function textMeasure(el: HTMLElement): Measure {
  const canvas = document.createElement("canvas");
  const c2d = canvas.getContext("2d");
  const family = getComputedStyle(el).fontFamily || "sans-serif";
  if (!c2d) return (t) => t.length * FONT_PX * 0.62;
  c2d.font = `${String(FONT_PX)}px ${family}`;
  return (t) => c2d.measureText(t).width;
}

function nodeLines(n: GraphNode): string[] {
  const selfUs = n.self_time_us;
  return [n.name, `${n.opcode} ${n.shape}`, selfUs > 0 ? formatDuration(selfUs, "us") : ""];
}

function pre(text: string, cls: string): HTMLElement {
  return h("pre", { class: `tbp-hlo-text ${cls}` }, text);
}

/** The metadata panel of one node: what XProf shows beside its graph. */
function showNode(ctx: PageContext<GraphViewerResult>, box: HTMLElement, n: GraphNode, programId: string): void {
  box.textContent = "";
  const name = n.name;
  box.appendChild(h("h3", { class: "tbp-graph-meta-name", "data-meta-node": name }, name));
  const rows: [string, string][] = [
    ["Opcode", n.opcode],
    ["Category", n.category],
    ["Shape", n.shape],
    ["Framework op", n.framework_op || "–"],
    ["Source", n.source || "–"],
    ["Self time", n.self_time_us > 0 ? formatDuration(n.self_time_us, "us") : "did not run as a device op"],
    ["Distance", n.center ? "the centre op" : `${formatNumber(n.distance)} edges from the centre`],
  ];
  box.appendChild(h("dl", { class: "tbp-kv" }, ...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
  if (!n.center) {
    const centre = h("button", { type: "button", class: "tbp-btn", "data-action": "centre" }, "Centre graph here");
    centre.addEventListener("click", () => ctx.setOptions({ node_name: name, module: programId }));
    box.appendChild(centre);
  }
  box.appendChild(h("h4", {}, "HLO text"));
  box.appendChild(pre(n.hlo_text, "tbp-hlo-op"));
  const called = n.called_text;
  if (called) {
    box.appendChild(h("h4", {}, n.opcode === "fusion" ? "Fused computation" : "Called computations"));
    box.appendChild(pre(called, "tbp-hlo-called"));
  }
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
  const programId = raw.program_id;
  const modules = raw.modules;
  const ops = raw.ops;

  const moduleSelect = h("select", { class: "tbp-graph-module", "aria-label": "HLO module" });
  for (const m of modules) {
    const t = m.device_time_us;
    const opt = h("option", { value: m.program_id }, `${m.module}${t > 0 ? ` — ${formatDuration(t, "us")}` : ""}`);
    if (m.program_id === programId) opt.selected = true;
    moduleSelect.appendChild(opt);
  }
  // A new module opens on its own most expensive fusion (the backend's default for it).
  moduleSelect.addEventListener("change", () => ctx.setOptions({ module: moduleSelect.value, node_name: null }));

  // The op picker: a text input with the module's ops as suggestions (the browser filters
  // them as one types); ops that ran come first, with their self time.
  const listId = "tbp-graph-ops";
  const datalist = h("datalist", { id: listId });
  for (const o of ops) {
    const t = o.self_time_us;
    datalist.appendChild(h("option", { value: o.name }, `${o.opcode}${t > 0 ? ` · ${formatDuration(t, "us")}` : ""}`));
  }
  const input = h("input", { type: "search", list: listId, value: raw.node_name, "aria-label": "HLO op", class: "tbp-graph-op", placeholder: "search an op…", spellcheck: "false" });
  const width = h("input", { type: "number", min: 0, max: 16, value: String(raw.graph_width), "aria-label": "Graph width", class: "tbp-graph-width" });
  const show = (): void => ctx.setOptions({ node_name: input.value.trim() || null, graph_width: width.value || null, module: input.value.trim() ? programId : null });
  const go = h("button", { type: "button", class: "tbp-btn" }, "Show");
  go.addEventListener("click", show);
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") show();
  });
  input.addEventListener("change", () => {
    // Picking a suggestion (not typing) shows it at once.
    if (ops.some((o) => o.name === input.value)) show();
  });
  const dot = h("button", { type: "button", class: "tbp-btn", "data-download": "dot" }, "Download DOT");
  dot.addEventListener("click", () => {
    void ctx.api
      .data({ ...ctx.request, options: { ...ctx.request.options, format: "dot" } }, 0, ctx.signal)
      .then((r) => downloadText(typedResult("graph_viewer", r).raw.dot ?? "", `${raw.node_name || "graph"}.dot`, "text/vnd.graphviz"))
      // Left before the answer came (an abort), or it failed: say so rather than reject unhandled.
      .catch((e: unknown) => {
        if (ctx.signal.aborted) return;
        dot.textContent = "Download DOT (failed)";
        dot.title = `The DOT file could not be made: ${e instanceof Error ? e.message : String(e)}`;
      });
  });
  const hloButton = h("button", { type: "button", class: "tbp-btn", "data-action": "module-hlo", "aria-expanded": "false" }, "Module HLO text");
  el.appendChild(
    h("div", { class: "tbp-toolbar" },
      h("label", { class: "tbp-field" }, h("span", {}, "Module"), moduleSelect),
      h("label", { class: "tbp-field" }, h("span", {}, "Op"), input, datalist),
      h("label", { class: "tbp-field" }, h("span", {}, "Width (edges)"), width),
      go, dot, hloButton),
  );
  const nodes = raw.nodes;
  const edges = raw.edges;
  el.appendChild(h("p", { class: "tbp-muted" },
    `${raw.module} · computation ${raw.computation} · ${formatNumber(nodes.length)} ops shown · ${formatNumber(ops.length)}${raw.ops_truncated ? "+" : ""} ops in the picker`));
  if (raw.truncated) el.appendChild(messageBox({ title: "Graph cut", body: "Only the nearest 2000 ops are shown: lower the width." }));

  const hloBox = h("div", { class: "tbp-graph-module-hlo", hidden: true });
  el.appendChild(hloBox);
  hloButton.addEventListener("click", () => {
    const open = hloBox.hidden;
    hloBox.hidden = !open;
    hloButton.setAttribute("aria-expanded", String(open));
    if (!open || hloBox.childElementCount > 0) return;
    hloBox.appendChild(h("p", { class: "tbp-muted" }, "Loading the module's HLO text…"));
    void ctx.api
      .data({ ...ctx.request, options: { ...ctx.request.options, format: "hlo" } }, 0, ctx.signal)
      .then((r) => {
        const text = typedResult("graph_viewer", r).raw.hlo_text ?? "";
        hloBox.textContent = "";
        const save = h("button", { type: "button", class: "tbp-btn" }, "Download");
        save.addEventListener("click", () => downloadText(text, `${raw.module || "module"}.hlo.txt`, "text/plain"));
        const box = panel(hloBox, `HLO text of ${raw.module}`);
        box.appendChild(save);
        box.appendChild(pre(text, "tbp-hlo-module"));
      })
      .catch((e: unknown) => {
        if (ctx.signal.aborted) return;
        hloBox.replaceChildren(h("p", { class: "tbp-error" }, `The module's HLO text could not be loaded: ${e instanceof Error ? e.message : String(e)}`));
      });
  });

  const layoutEl = h("div", { class: "tbp-graph-layout" });
  el.appendChild(layoutEl);
  const box = panel(layoutEl, "HLO graph (operands above users; fill = self time)");
  const meta = h("aside", { class: "tbp-graph-meta", "aria-label": "Selected op" });
  layoutEl.appendChild(meta);
  const { layoutGraph, nodeBox } = await import("./layout");
  if (ctx.signal.aborted) return;
  const measure = textMeasure(el);
  const boxes = new Map(nodes.map((n) => [n.name, nodeBox(nodeLines(n), measure, MIN_NODE_PX, MAX_NODE_PX, PAD_PX)]));
  const nodeH = PAD_PX + 3 * LINE_PX + 4;
  const placed = layoutGraph(
    nodes.map((n) => ({ name: n.name, width: boxes.get(n.name)?.width ?? MIN_NODE_PX, height: nodeH })),
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
  const groups = new Map<string, SVGGElement>();
  const select = (name: string): void => {
    const n = byName.get(name);
    if (!n) return;
    for (const [k, g] of groups) g.classList.toggle("tbp-graph-selected", k === name);
    showNode(ctx, meta, n, programId);
  };
  for (const p of placed.nodes) {
    const n = byName.get(p.name);
    if (!n) continue;
    const selfUs = n.self_time_us;
    const centre = n.center;
    const g = svg("g", { class: "tbp-graph-node", transform: `translate(${p.x},${p.y})`, "data-node": p.name, tabindex: 0, role: "button" });
    const rect = svg("rect", { width: p.width, height: p.height, rx: 4, style: heatFill(selfUs, maxUs), stroke: centre ? "#1a73e8" : "#888", "stroke-width": centre ? 3 : 1 });
    const title = svg("title", {});
    title.textContent = `${p.name}\n${n.opcode} ${n.shape}\n${n.framework_op}\nself time ${formatDuration(selfUs, "us")}\n(click: details; double click: centre here)`;
    g.appendChild(title);
    g.appendChild(rect);
    (boxes.get(p.name)?.lines ?? []).forEach((text, i) => {
      const t = svg("text", { x: PAD_PX, y: PAD_PX + FONT_PX + i * LINE_PX - 2, "font-size": FONT_PX, style: "fill: var(--tbp-fg)" });
      t.textContent = text;
      g.appendChild(t);
    });
    const recentre = (): void => ctx.setOptions({ node_name: p.name, module: programId });
    g.addEventListener("click", () => select(p.name));
    g.addEventListener("dblclick", recentre);
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") recentre();
      else if (ev.key === " ") {
        ev.preventDefault();
        select(p.name);
      }
    });
    groups.set(p.name, g);
    root.appendChild(g);
  }
  const scroller = h("div", { class: "tbp-graph-scroll", style: "overflow:auto;max-height:70vh" }, root);
  // Fit the graph to the panel's width, but not below MIN_SCALE (text stays readable; wider
  // graphs scroll); "Actual size" shows it at 100 %. The centre op is scrolled into view.
  const zoom = h("button", { type: "button", class: "tbp-btn", "data-action": "zoom", "aria-pressed": "false" }, "Actual size");
  box.appendChild(h("div", { class: "tbp-graph-tools" }, zoom));
  box.appendChild(scroller);
  let actual = false;
  const centreNode = placed.nodes.find((p) => byName.get(p.name)?.center === true);
  const applyZoom = (): void => {
    const avail = Math.max(200, scroller.clientWidth - 4);
    const scale = actual ? 1 : Math.max(MIN_SCALE, Math.min(1, avail / Math.max(1, placed.width)));
    root.setAttribute("width", String(Math.round(placed.width * scale)));
    root.setAttribute("height", String(Math.round(placed.height * scale)));
    root.dataset.scale = scale.toFixed(3);
    zoom.setAttribute("aria-pressed", String(actual));
    if (centreNode) {
      scroller.scrollLeft = Math.max(0, (centreNode.x + centreNode.width / 2) * scale - scroller.clientWidth / 2);
      scroller.scrollTop = Math.max(0, (centreNode.y + centreNode.height / 2) * scale - scroller.clientHeight / 2);
    }
  };
  zoom.addEventListener("click", () => {
    actual = !actual;
    applyZoom();
  });
  applyZoom();
  select(raw.node_name);
}

export const graphViewerPage: PageSpec<GraphViewerResult> = { render, hideOptions: ["node_name", "graph_width", "module", "format"] };
