import { describe, expect, it } from "vitest";
import { operationLabel, sizeClass } from "./memory_labels";

describe("memory breakdown names", () => {
  it("gives a blank operation its size class (jax_mlp GPU_0_bfc rows)", () => {
    expect(operationLabel("", 83886080)).toBe("(unnamed, 64–128 MiB)"); // 80 MiB
    expect(operationLabel("", 67108864)).toBe("(unnamed, 64–128 MiB)");
    expect(operationLabel("", 60928)).toBe("(unnamed, 32–64 KiB)");
    expect(operationLabel("  ", 1000)).toBe("(unnamed, 512 B–1 KiB)");
  });
  it("leaves named operations alone", () => {
    expect(operationLabel("unused preallocated device memory", 203494144)).toBeNull();
  });
  it("has a size class for nothing", () => {
    expect(sizeClass(0)).toBe("0 B");
  });
});
