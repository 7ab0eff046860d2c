import { describe, expect, it } from "vitest";
import {
  formatBandwidth,
  formatByKey,
  formatBytes,
  formatDuration,
  formatDurationPs,
  formatNumber,
  formatPercent,
  formatRatio,
  formatWithUnit,
  groupDigits,
  humanizeKey,
  unitFromKey,
} from "./format";

describe("groupDigits", () => {
  it.each([
    ["0", "0"],
    ["999", "999"],
    ["1000", "1,000"],
    ["-1234567.891", "-1,234,567.891"],
    ["12345.678901", "12,345.678901"], // decimals are never grouped
  ])("%s -> %s", (input, out) => expect(groupDigits(input)).toBe(out));
});

describe("formatNumber", () => {
  it.each([
    [0, "0"],
    [21324, "21,324"], // integers are exact
    [-5, "-5"],
    [3.14159, "3.142"], // 4 significant digits
    [123456.789, "123,457"], // magnitude 5 > digits: no decimals, rounded
    [0.000123456, "0.000123"], // magnitude -4 wants 4-1+4 = 7 decimals, capped at 6
    [2.5, "2.5"], // trailing zeros dropped
    [1e-9, "1.000e-9"], // below 1e-6: exponent form
  ])("%s -> %s", (v, out) => expect(formatNumber(v)).toBe(out));
  it("says what is not a number", () => {
    expect(formatNumber(Number.NaN)).toBe("–");
    expect(formatNumber(Number.POSITIVE_INFINITY)).toBe("∞");
  });
});

describe("durations", () => {
  it.each([
    [0, "0"],
    [999, "999 ps"],
    [1_000, "1 ns"],
    [1_500_000, "1.5 µs"],
    [89_910_000_000, "89.91 ms"], // jax_2hosts span: 89.91e9 ps
    [2.5e12, "2.5 s"],
    [-3e9, "-3 ms"],
  ])("%s ps -> %s", (ps, out) => expect(formatDurationPs(ps)).toBe(out));
  it("converts from any unit", () => {
    expect(formatDuration(1500, "us")).toBe("1.5 ms"); // 1500 µs = 1.5 ms
    expect(formatDuration(0.25, "ms")).toBe("250 µs");
    expect(formatDuration(1234, "ns")).toBe("1.234 µs");
    expect(formatDuration(90, "s")).toBe("90 s"); // seconds are the largest unit
  });
  it("rejects unknown units", () => expect(() => formatDuration(1, "min")).toThrow(/unknown time unit/));
});

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [1023, "1,023 B"],
    [1024, "1 KiB"],
    [1536, "1.5 KiB"],
    [5 * 2 ** 20, "5 MiB"],
    [3.25 * 2 ** 30, "3.25 GiB"],
    [2 ** 41, "2 TiB"],
  ])("%s -> %s", (b, out) => expect(formatBytes(b)).toBe(out));
});

describe("percent", () => {
  it("formats percentages and ratios", () => {
    expect(formatPercent(12.345)).toBe("12.3%");
    expect(formatPercent(100)).toBe("100.0%");
    expect(formatPercent(-0.01)).toBe("0.0%"); // no "-0.0%"
    expect(formatRatio(0.5)).toBe("50.0%");
    expect(formatPercent(Number.NaN)).toBe("–");
  });
});

describe("units", () => {
  it("formats by a column's unit", () => {
    expect(formatWithUnit(2000, "us")).toBe("2 ms");
    expect(formatWithUnit(2048, "bytes")).toBe("2 KiB");
    expect(formatWithUnit(3, "MiB")).toBe("3 MiB");
    expect(formatWithUnit(42.42, "%")).toBe("42.4%");
    expect(formatWithUnit(12.5, "GFLOP/s")).toBe("12.5 GFLOP/s");
    expect(formatWithUnit(7, "")).toBe("7");
  });
  it("shows every bandwidth in GiB/s (#29 §4: one unit across pages, XProf's)", () => {
    expect(formatBandwidth(2 ** 31)).toBe("2 GiB/s");
    // HTA's decimal GB/s: 1.073741824 GB/s is 1 GiB/s.
    expect(formatWithUnit(1.073741824, "GB/s")).toBe("1 GiB/s");
  });
  it("reads units from field names", () => {
    expect(unitFromKey("span_ps")).toBe("ps");
    expect(unitFromKey("step_time_ms")).toBe("ms");
    expect(unitFromKey("peak_bytes")).toBe("bytes");
    expect(unitFromKey("idle_percent")).toBe("%");
    expect(unitFromKey("event_count")).toBe("");
    expect(unitFromKey("status")).toBe(""); // ends in "s" but not "_s"
  });
  it("formats fields by name", () => {
    expect(formatByKey("span_ps", 89_910_000_000)).toBe("89.91 ms");
    expect(formatByKey("event_count", 21324)).toBe("21,324");
    expect(formatByKey("device_types", ["GPU", "CPU"])).toBe("GPU, CPU");
    expect(formatByKey("ok", true)).toBe("yes");
    expect(formatByKey("x", null)).toBe("–");
  });
  it("humanizes keys", () => {
    expect(humanizeKey("step_time_ms")).toBe("Step time");
    expect(humanizeKey("tf_op_count")).toBe("TF op count");
    expect(humanizeKey("host_count")).toBe("Host count");
    expect(humanizeKey("device_ops")).toBe("Device ops");
  });
});
