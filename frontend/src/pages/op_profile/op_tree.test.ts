import { describe, expect, it } from "vitest";
import { boundBy, devicePeaks, overPeak, utilization, utilText, wastedUs } from "./op_tree";

// An H100 SXM's dense bf16 peak (~989 TFLOP/s) and HBM3 bandwidth (3.35 TB/s).
const peaks = { flopsPerSec: 989e12, hbmBytesPerSec: 3.35e12 };

describe("op profile tree", () => {
  it("reads the device's peaks and nothing else", () => {
    expect(devicePeaks({ peaks: { flop_rate_gflops_per_sec: 989e3, hbm_bw_gbytes_per_sec: 3.35e3 } })).toEqual(peaks);
    expect(devicePeaks({})).toBeNull();
    // 0: unknown peaks (docs/api.md).
    expect(devicePeaks({ peaks: { flop_rate_gflops_per_sec: 0, hbm_bw_gbytes_per_sec: 4814.3 } })).toBeNull();
  });

  it("divides achieved rates by the peaks, preferring the backend's own utilisation", () => {
    // jax_mlp's by_category root: 7,368 GFLOP/s and 103 GB/s -> 0.745 % and 3.08 % of the peaks.
    const u = utilization({ flop_rate_gflops_per_sec: 7367.94, memory_bw_gbytes_per_sec: 103.24 }, peaks);
    expect(u.flops).toBeCloseTo(7367.94e9 / 989e12, 6);
    expect(u.hbm).toBeCloseTo(103.24e9 / 3.35e12, 6);
    expect(utilization({ flops_utilization: 0.5, memory_bw_gbytes_per_sec: 1 }, null)).toEqual({ flops: 0.5, hbm: null });
  });

  it("counts as wasted the time the best utilisation leaves unused", () => {
    // The backend's fraction is of the root's time: 5 % of a 94.5 ms root.
    expect(wastedUs({ total_time_us: 5449, time_wasted_fraction: 0.05 }, { flops: 0, hbm: 0.1 }, 94503.544)).toBeCloseTo(4725.18, 2);
    expect(wastedUs({ total_time_us: 100 }, { flops: 0.25, hbm: 0.6 }, 1000)).toBeCloseTo(40, 9);
    expect(wastedUs({ total_time_us: 100 }, { flops: null, hbm: null }, 1000)).toBeNull();
  });

  it("never shows more than the peak or a negative wasted time (#29 §3)", () => {
    // A custom-call at 111 % of the FLOP peak: the backend's XProf formula gives
    // (t / root) x (1 - 1.11) < 0; the page shows "> 100%" and no wasted time.
    const u = { flops: 1.11, hbm: 0.2 };
    expect(overPeak(u)).toBe(true);
    expect(utilText(u.flops)).toBe("> 100%");
    expect(wastedUs({ total_time_us: 18545, time_wasted_fraction: -0.0216 }, u, 94503.544)).toBeNull();
    // Rounding noise below zero is no time wasted, not a negative one.
    expect(wastedUs({ total_time_us: 10, time_wasted_fraction: -1e-12 }, { flops: 1, hbm: 0 }, 100)).toBe(0);
    expect(utilText(0.0068825)).toBe("0.7%");
    expect(utilText(null)).toBe("–");
  });

  it("says what bounds an op: the roofline's ridge point", () => {
    // Ridge: 989e12 / 3.35e12 = 295 FLOP per byte. all-reduce.2.1: 1.0e9 FLOP over 2.7e9 bytes.
    expect(boundBy({ flops: 1006632960, bytes_accessed: 2684354560 }, peaks)).toBe("memory bandwidth");
    expect(boundBy({ flops: 1e12, bytes_accessed: 1e9 }, peaks)).toBe("compute");
    expect(boundBy({ flops: 1, bytes_accessed: 1 }, null)).toBeNull();
  });
});
