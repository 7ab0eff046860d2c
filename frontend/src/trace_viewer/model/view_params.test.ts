import { describe, expect, it } from "vitest";
import { parseSelection, parseWindow, selectionParam } from "./view_params";

describe("trace viewer URL state", () => {
  it("reads and writes selections of profile events and of derived lines", () => {
    expect(parseSelection("3:1207")).toEqual({ kind: "event", plane: 3, row: 1207 });
    expect(parseSelection("d12:4")).toEqual({ kind: "derived", track: 12, index: 4 });
    for (const sel of ["3:1207", "d12:4"]) {
      const ref = parseSelection(sel);
      expect(ref && selectionParam(ref)).toBe(sel);
    }
  });
  it("ignores damaged selections", () => {
    for (const bad of [null, "", "3", "3:", ":4", "3:4:5", "x:1", "d:1", "-1:2", "1.5:2"]) expect(parseSelection(bad)).toBeNull();
  });
  it("reads a window only when it is one", () => {
    expect(parseWindow("100", "2000")).toEqual({ startPs: 100, endPs: 2000 });
    expect(parseWindow("2000", "100")).toBeNull();
    expect(parseWindow(null, "100")).toBeNull();
    expect(parseWindow("", "100")).toBeNull();
    expect(parseWindow("a", "100")).toBeNull();
  });
});
