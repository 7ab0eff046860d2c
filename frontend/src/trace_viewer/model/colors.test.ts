import { describe, expect, it } from "vitest";
import { colorOf, densityLevel, hashName, textOn } from "./colors";

describe("colours", () => {
  it("are stable per name and spread over the palette", () => {
    expect(colorOf("MatMul")).toBe(colorOf("MatMul"));
    expect(hashName("")).toBe(0x811c9dc5);
    const names = Array.from({ length: 200 }, (_, i) => `op_${i}`);
    expect(new Set(names.map(colorOf)).size).toBeGreaterThan(12);
  });
  it("pick readable text", () => {
    expect(textOn("#ffffff")).toBe("#1f2328");
    expect(textOn("#000000")).toBe("#ffffff");
  });
  it("shade density boxes by busy fraction", () => {
    expect(densityLevel(0)).toBe(0);
    expect(densityLevel(0.3)).toBe(1);
    expect(densityLevel(1)).toBe(3);
  });
});
