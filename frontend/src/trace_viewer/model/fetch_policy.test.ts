import { describe, expect, it } from "vitest";
import { covers, paddedRequest, pow2Floor } from "./fetch_policy";

describe("fetch policy", () => {
  it("asks for the whole span (cacheable) when the padded window covers it", () => {
    expect(paddedRequest({ startPs: 0, endPs: 1e9, widthPx: 1000 }, 1e9)).toEqual({ startPs: null, endPs: null, widthPx: 1000 });
  });
  it("pads by a visible span on each side, on a grid of 64 buckets", () => {
    const r = paddedRequest({ startPs: 4e8, endPs: 5e8, widthPx: 1000 }, 1e9);
    const grid = pow2Floor(1e8 / 1000) * 64;
    expect(r.startPs).not.toBeNull();
    expect((r.startPs ?? 0) % grid).toBe(0);
    expect(r.startPs).toBeLessThanOrEqual(3e8);
    expect(r.endPs).toBeGreaterThanOrEqual(6e8);
    // Same pixels per picosecond as the view.
    expect(r.widthPx).toBe(Math.round((1000 * ((r.endPs ?? 0) - (r.startPs ?? 0))) / 1e8));
  });
  it("refetches when the view leaves the window or boxes get wider than 1.5 px", () => {
    const loaded = { startPs: 0, endPs: 1e9, resolutionPs: 2 ** 19 }; // 524 288 ps per box
    expect(covers(loaded, { startPs: 0, endPs: 1e9, widthPx: 1000 }, 1e9)).toBe(true); // 1e6 ps/px
    expect(covers(loaded, { startPs: 0, endPs: 3e8, widthPx: 1000 }, 1e9)).toBe(false); // 3e5 ps/px
    expect(covers(loaded, { startPs: 5e8, endPs: 1.2e9, widthPx: 700 }, 2e9)).toBe(false);
    expect(covers(null, { startPs: 0, endPs: 1, widthPx: 1 }, 1)).toBe(false);
  });
});
