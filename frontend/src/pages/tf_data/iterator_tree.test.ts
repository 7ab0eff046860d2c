import { describe, expect, it } from "vitest";
import { layoutTree, parentOf, shortName } from "./iterator_tree";

// The iterator names of custom_loop's pipeline (tf_data_bottleneck_analysis on the real profile).
const NAMES = [
  "Iterator::Root",
  "Iterator::Root::Prefetch",
  "Iterator::Root::Prefetch::ForeverRepeat",
  "Iterator::Root::Prefetch::ForeverRepeat[0]::Prefetch",
  "Iterator::Root::Prefetch::ForeverRepeat[0]::Prefetch::MapAndBatch",
  "Iterator::Root::Prefetch::ForeverRepeat[0]::Prefetch::MapAndBatch::Shuffle",
  "Iterator::Root::Prefetch::ForeverRepeat[0]::Prefetch::MapAndBatch::Shuffle::TensorSlice",
];

describe("iterator tree", () => {
  it("finds parents through '::' and '[i]' segments", () => {
    const set = new Set(NAMES);
    expect(parentOf(NAMES[0] ?? "", set)).toBeNull();
    expect(parentOf(NAMES[1] ?? "", set)).toBe("Iterator::Root");
    // "...ForeverRepeat[0]::Prefetch": the input [0] of ForeverRepeat.
    expect(parentOf(NAMES[3] ?? "", set)).toBe("Iterator::Root::Prefetch::ForeverRepeat");
    expect(parentOf("Iterator::Zip[1]::Map", new Set(["Iterator::Zip"]))).toBe("Iterator::Zip");
  });
  it("lays a chain out on one row, depth = distance from the root", () => {
    const nodes = layoutTree(NAMES);
    expect(nodes.map((n) => n.depth)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(new Set(nodes.map((n) => n.row))).toEqual(new Set([0]));
  });
  it("centres a parent over its children", () => {
    const nodes = layoutTree(["Iterator::Zip", "Iterator::Zip[0]::A", "Iterator::Zip[1]::B"]);
    expect(nodes.map((n) => n.row)).toEqual([0.5, 0, 1]);
  });
  it("shortens labels", () => expect(shortName(NAMES[6] ?? "")).toBe("TensorSlice"));
});
