import { describe, expect, it } from "vitest";
import { wheelAction } from "./controls";

const wheel = (deltaX: number, deltaY: number, keys: { ctrl?: boolean; meta?: boolean; shift?: boolean } = {}) =>
  wheelAction({ deltaX, deltaY, deltaMode: 0, ctrlKey: keys.ctrl ?? false, metaKey: keys.meta ?? false, shiftKey: keys.shift ?? false });

describe("wheelAction (#29 §5: Perfetto's and XProf's convention)", () => {
  it("scrolls the tracks with the plain wheel", () => {
    expect(wheel(0, 120)).toEqual({ kind: "scroll", dy: 120 });
  });
  it("zooms with ctrl or ⌘ (and a pinch, which arrives as ctrl + wheel)", () => {
    const a = wheel(0, -100, { ctrl: true });
    expect(a?.kind).toBe("zoom");
    expect(a?.kind === "zoom" && a.factor).toBeCloseTo(Math.exp(0.2), 9);
    expect(wheel(0, 100, { meta: true })?.kind).toBe("zoom");
  });
  it("pans with shift or a horizontal wheel", () => {
    expect(wheel(0, 50, { shift: true })).toEqual({ kind: "pan", dx: 50 });
    expect(wheel(80, 10)).toEqual({ kind: "pan", dx: 80 });
  });
  it("does nothing without movement", () => {
    expect(wheel(0, 0)).toBeNull();
  });
});
