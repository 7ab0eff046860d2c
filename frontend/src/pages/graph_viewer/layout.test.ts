import { describe, expect, it } from "vitest";
import { layoutGraph } from "./layout";

describe("layoutGraph", () => {
  it("puts operands above their users and keeps every node and edge", () => {
    // a and b feed c; c feeds d: three layers, so d is below c is below a and b.
    const box = { width: 100, height: 40 };
    const placed = layoutGraph(
      [{ name: "a", ...box }, { name: "b", ...box }, { name: "c", ...box }, { name: "d", ...box }],
      [{ from: "a", to: "c" }, { from: "b", to: "c" }, { from: "c", to: "d" }, { from: "x", to: "d" }],
    );
    const y = (name: string): number => placed.nodes.find((n) => n.name === name)?.y ?? Number.NaN;
    expect(y("a")).toBe(y("b"));
    expect(y("c")).toBeGreaterThan(y("a"));
    expect(y("d")).toBeGreaterThan(y("c"));
    // The edge from the unknown node "x" is dropped, the others keep their end points.
    expect(placed.edges.map((e) => `${e.from}>${e.to}`).sort()).toEqual(["a>c", "b>c", "c>d"]);
    for (const e of placed.edges) expect(e.points.length).toBeGreaterThanOrEqual(2);
    expect(placed.width).toBeGreaterThanOrEqual(200);
  });
});
