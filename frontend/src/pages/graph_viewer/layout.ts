// Layered layout of an HLO graph with dagre (operands above their users). Pure: boxes in,
// positions out, so it is tested without a browser. Loaded lazily by the graph page.

import { Graph, layout } from "@dagrejs/dagre";

export interface GraphNodeIn {
  name: string;
  width: number;
  height: number;
}

export interface GraphEdgeIn {
  from: string;
  to: string;
}

export interface PlacedNode {
  name: string;
  /** Top-left corner and size, in SVG units. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  points: { x: number; y: number }[];
}

export interface Placed {
  width: number;
  height: number;
  nodes: PlacedNode[];
  edges: PlacedEdge[];
}

export function layoutGraph(nodes: readonly GraphNodeIn[], edges: readonly GraphEdgeIn[]): Placed {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 48, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set<string>();
  for (const n of nodes) {
    g.setNode(n.name, { width: n.width, height: n.height });
    known.add(n.name);
  }
  edges.forEach((e, i) => {
    if (known.has(e.from) && known.has(e.to)) g.setEdge(e.from, e.to, {}, String(i));
  });
  layout(g);
  const placed: PlacedNode[] = nodes.map((n) => {
    const p = g.node(n.name) as { x: number; y: number; width: number; height: number };
    return { name: n.name, x: p.x - p.width / 2, y: p.y - p.height / 2, width: p.width, height: p.height };
  });
  const out: PlacedEdge[] = g.edges().map((e) => {
    const label = g.edge(e) as { points?: { x: number; y: number }[] };
    return { from: e.v, to: e.w, points: label.points ?? [] };
  });
  const graph = g.graph() as { width?: number; height?: number };
  return { width: graph.width ?? 0, height: graph.height ?? 0, nodes: placed, edges: out };
}

/** Width of a text in px (a canvas' measureText in the browser; a stub in tests). */
export type Measure = (text: string) => number;

/**
 * The text cut in the middle with "…" so that it measures at most maxPx: HLO names differ at
 * their end (fusion.12 vs fusion.13) and shapes at their start, so both ends stay.
 */
export function fitText(text: string, maxPx: number, measure: Measure): string {
  if (measure(text) <= maxPx) return text;
  let lo = 0;
  let hi = text.length;
  // The longest total kept length whose cut text fits (binary search: measure is monotone).
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (measure(cutMiddle(text, mid)) <= maxPx) lo = mid;
    else hi = mid - 1;
  }
  return cutMiddle(text, lo);
}

function cutMiddle(text: string, keep: number): string {
  if (keep >= text.length) return text;
  const head = Math.ceil(keep / 2);
  return `${text.slice(0, head)}…${text.slice(text.length - (keep - head))}`;
}

export interface NodeBox {
  width: number;
  lines: string[];
}

/**
 * A node's box: as wide as its longest line (plus padding) between minPx and maxPx, and its
 * lines cut to fit that width, so no text runs past its box.
 */
export function nodeBox(lines: readonly string[], measure: Measure, minPx: number, maxPx: number, padPx: number): NodeBox {
  const widest = Math.max(0, ...lines.map((l) => measure(l)));
  const width = Math.min(maxPx, Math.max(minPx, Math.ceil(widest) + 2 * padPx));
  return { width, lines: lines.map((l) => fitText(l, width - 2 * padPx, measure)) };
}
