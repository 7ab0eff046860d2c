import { describe, expect, it } from "vitest";
import { matchesAllTerms, newestFirst } from "./search";

describe("search", () => {
  it("needs every term, case-insensitively, as plain text", () => {
    expect(matchesAllTerms("keras_cnn/train/2026_11_26", "KERAS 2026")).toBe(true);
    expect(matchesAllTerms("keras_cnn/train/2026_11_26", "keras jax")).toBe(false);
    expect(matchesAllTerms("a.b", "a.b")).toBe(true);
    expect(matchesAllTerms("axb", "a.b")).toBe(false); // "." is not a regex wildcard
    expect(matchesAllTerms("anything", "  ")).toBe(true);
  });
  it("orders newest first, ties by name", () => {
    const runs = [
      { name: "b", mtime: 10 },
      { name: "c", mtime: 30 },
      { name: "a", mtime: 10 },
    ];
    expect(newestFirst(runs).map((r) => r.name)).toEqual(["c", "a", "b"]);
  });
});
