import { describe, expect, it } from "vitest";
import { byteAxis } from "./byte_ticks";
import { formatBytes } from "./format";

const MiB = 2 ** 20;

describe("byte axes", () => {
  it("ticks 40 MB of heap at 16, 32, 48 MiB (not 19.07, 38.15)", () => {
    const a = byteAxis(40e6); // 38.1 MiB
    expect(a).toEqual({ interval: 8 * MiB, max: 40 * MiB });
    const ticks = Array.from({ length: a.max / a.interval + 1 }, (_, i) => formatBytes(i * a.interval));
    expect(ticks).toEqual(["0 B", "8 MiB", "16 MiB", "24 MiB", "32 MiB", "40 MiB"]);
  });
  it("uses the smallest power-of-two step that fits in the tick budget", () => {
    expect(byteAxis(45 * MiB, 3)).toEqual({ interval: 16 * MiB, max: 48 * MiB });
    expect(byteAxis(100 * MiB)).toEqual({ interval: 32 * MiB, max: 128 * MiB });
    expect(byteAxis(64 * 2 ** 30)).toEqual({ interval: 16 * 2 ** 30, max: 64 * 2 ** 30 });
    expect(byteAxis(1000)).toEqual({ interval: 256, max: 1024 });
  });
  it("has an axis even with no bytes", () => {
    expect(byteAxis(0)).toEqual({ interval: 1024, max: 1024 });
  });
});
