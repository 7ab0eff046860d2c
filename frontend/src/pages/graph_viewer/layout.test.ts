import { describe, expect, it } from "vitest";
import { fitText, layoutGraph, nodeBox } from "./layout";

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

describe("fitText and nodeBox", () => {
  const measure = (t: string): number => t.length * 7; // 7 px a character

  it("keeps a text that fits and cuts a long one in the middle to the width", () => {
    expect(fitText("fusion.1", 100, measure)).toBe("fusion.1");
    // 100 px hold 14 characters: 13 kept around the ellipsis.
    const cut = fitText("loop_broadcast_add_subtract_fusion.12", 100, measure);
    expect(cut.length).toBe(14);
    // 7 characters before the cut, 6 after.
    expect(cut).toBe("loop_br…ion.12");
    expect(measure(cut)).toBeLessThanOrEqual(100);
  });

  it("sizes a box to its longest line within bounds, and cuts only what exceeds the maximum", () => {
    // "abcdefghij" = 70 px + 2 x 8 padding = 86 px.
    expect(nodeBox(["abc", "abcdefghij"], measure, 60, 200, 8)).toEqual({ width: 86, lines: ["abc", "abcdefghij"] });
    expect(nodeBox(["a"], measure, 60, 200, 8).width).toBe(60);
    const wide = nodeBox(["x".repeat(100)], measure, 60, 200, 8);
    expect(wide.width).toBe(200);
    expect(measure(wide.lines[0] ?? "")).toBeLessThanOrEqual(200 - 16);
  });
});
