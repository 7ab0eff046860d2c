import { describe, expect, it } from "vitest";
import type { LinkedEvent, SearchPage } from "./api";
import { countText, matchAt, nameMatcher, onPage, pageOffset, type SearchState, stepIndex } from "./search_paging";

const ev = (row: number): LinkedEvent => ({ plane: 0, row, track: row % 3, name: "x", startPs: row, durPs: 1, depth: 0 });

/** A page of `total` matches loaded at `offset` (rows = match index, so each is recognisable). */
function page(total: number, offset: number, size = 100): SearchPage {
  const n = Math.max(0, Math.min(size, total - offset));
  return { query: "x", total, offset, matches: Array.from({ length: n }, (_, i) => ev(offset + i)), firstDeviceOffset: null };
}

const state = (total: number, index: number, offset = 0): SearchState => ({ query: "x", page: page(total, offset), index });

describe("search paging", () => {
  it("steps forward and back, wrapping at both ends", () => {
    expect(stepIndex(state(5, 0), 1)).toBe(1);
    expect(stepIndex(state(5, 4), 1)).toBe(0);
    expect(stepIndex(state(5, 0), -1)).toBe(4);
    expect(stepIndex(state(1, 0), 1)).toBe(0);
    expect(stepIndex(state(0, -1), 1)).toBeNull();
  });

  it("goes to the first match forward and the last back before any step", () => {
    expect(stepIndex(state(250, -1), 1)).toBe(0);
    expect(stepIndex(state(250, -1), -1)).toBe(249);
  });

  it("knows which page holds a match: 250 matches are pages at 0, 100 and 200", () => {
    expect(pageOffset(0)).toBe(0);
    expect(pageOffset(99)).toBe(0);
    expect(pageOffset(100)).toBe(100);
    expect(pageOffset(249)).toBe(200);
    const last = page(250, 200);
    expect(last.matches.length).toBe(50);
    expect(onPage(last, 199)).toBe(false);
    expect(onPage(last, 200)).toBe(true);
    expect(onPage(last, 249)).toBe(true);
    expect(matchAt(last, 249)?.row).toBe(249);
    expect(matchAt(last, 150)).toBeNull();
  });

  it("crosses pages when stepping: back from the first match needs the last page", () => {
    const s = state(250, 0);
    const next = stepIndex(s, -1) ?? -1;
    expect(next).toBe(249);
    expect(onPage(s.page, next)).toBe(false);
    expect(pageOffset(next)).toBe(200);
  });

  it("says how many and which", () => {
    expect(countText(null)).toBe("");
    expect(countText(state(0, -1))).toBe("no matches");
    expect(countText(state(1234, -1))).toBe("1,234 matches");
    expect(countText(state(1234, 9))).toBe("10 of 1,234");
  });

  it("highlights names that contain the query, and names of loaded matches (found by a stat)", () => {
    const byStat: SearchPage = { query: "dot", total: 1, offset: 0, matches: [{ ...ev(0), name: "fusion.3" }], firstDeviceOffset: null };
    const test = nameMatcher({ query: "DOT", page: byStat, index: 0 });
    expect(test("gemm_fusion_dot_17")).toBe(true);
    expect(test("fusion.3")).toBe(true); // its hlo_op stat matched
    expect(test("loop_add_fusion")).toBe(false);
  });
});
