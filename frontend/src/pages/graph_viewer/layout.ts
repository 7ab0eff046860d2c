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
