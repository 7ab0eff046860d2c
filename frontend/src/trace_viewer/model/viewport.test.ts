import { describe, expect, it } from "vitest";
import { MIN_SPAN_PS, tickInterval, Viewport } from "./viewport";

describe("viewport", () => {
  it("keeps the time under the cursor when zooming", () => {
    const v = new Viewport(1_000_000);
    v.widthPx = 1000;
    const before = v.psOf(250);
    v.zoomAt(250, 4);
    expect(v.durationPs).toBeCloseTo(250_000);
    expect(v.psOf(250)).toBeCloseTo(before);
  });
  it("pans by pixels and stays around the profile", () => {
    const v = new Viewport(1_000_000);
    v.widthPx = 1000;
    v.setWindow(100_000, 200_000);
    v.panPx(100); // 100 px of 100 ps
    expect(v.startPs).toBeCloseTo(110_000);
    v.panPx(1e9);
    expect(v.endPs).toBeLessThanOrEqual(1_100_000 + 1e-6); // at most a 10 % margin past the end
  });
  it("never zooms below MIN_SPAN_PS", () => {
    const v = new Viewport(1e12);
    v.widthPx = 800;
    v.zoomAt(400, 1e15);
    expect(v.durationPs).toBe(MIN_SPAN_PS);
  });
  it("picks 1/2/5 tick steps", () => {
    expect(tickInterval(1000, 90)).toBe(100_000); // 90 000 ps -> 100 000
    expect(tickInterval(1, 90)).toBe(100);
    expect(tickInterval(30, 90)).toBe(5000); // 2700 -> 5000
  });
});
