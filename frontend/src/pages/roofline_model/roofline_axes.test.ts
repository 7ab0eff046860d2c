import { describe, expect, it } from "vitest";
import { decadeBounds, decadeFormatter, decadeLabel } from "./roofline_axes";

describe("roofline axes (#29 §4)", () => {
  it("clamps to the decades around the data", () => {
    // jax_mlp-like: intensities 0.06 … 6,522.29 FLOP/byte.
    expect(decadeBounds([0.0625, 3.2, 6522.292993630574])).toEqual([0.01, 10000]);
    expect(decadeBounds([1000, 1000])).toEqual([1000, 10000]);
    expect(decadeBounds([0, -1, Number.NaN])).toEqual([1, 10]);
  });
  it("labels decades as digits in the middle and powers of ten at the ends", () => {
    expect(decadeLabel(1000)).toBe("1,000");
    expect(decadeLabel(0.01)).toBe("0.01");
    expect(decadeLabel(1)).toBe("1");
    expect(decadeLabel(1e7)).toBe("1e7");
    expect(decadeLabel(1e-5)).toBe("1e-5");
    expect(decadeLabel(6522.292993630574)).toBe("6,522");
  });
  it("keeps one style per axis", () => {
    const wide = decadeFormatter(0.01, 1e7); // jax_mlp's FLOP rates up to the 1.07 PFLOP/s peak
    expect([0.01, 1000, 1e7].map(wide)).toEqual(["1e-2", "1e3", "1e7"]);
    const narrow = decadeFormatter(0.1, 10000);
    expect([0.1, 1000, 10000].map(narrow)).toEqual(["0.1", "1,000", "10,000"]);
  });
});
