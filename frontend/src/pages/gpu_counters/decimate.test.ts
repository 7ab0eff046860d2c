import { describe, expect, it } from "vitest";
import { decimate, type Series } from "./decimate";

describe("min/max decimation", () => {
  it("leaves a short series alone", () => {
    const s: Series = [[0, 1], [1, 2], [2, 3]];
    expect(decimate(s, 10)).toBe(s);
  });
  it("keeps every bucket's extremes and the ends, in time order", () => {
    // 1,000 points of 0 with one spike of 9 at x = 500 and a dip of -3 at x = 10, into 10 buckets.
    const s: Series = Array.from({ length: 1000 }, (_, i): [number, number] => [i, i === 500 ? 9 : i === 10 ? -3 : 0]);
    const d = decimate(s, 10);
    expect(d.length).toBeLessThanOrEqual(3 * 10 + 1);
    expect(d).toContainEqual([500, 9]);
    expect(d).toContainEqual([10, -3]);
    expect(d[0]).toEqual([0, 0]);
    expect(d[d.length - 1]).toEqual([999, 0]);
    const xs = d.map((p) => p[0]);
    expect(xs).toEqual([...xs].sort((a, b) => a - b));
  });
});
