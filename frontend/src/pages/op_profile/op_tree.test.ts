import { describe, expect, it } from "vitest";
import { boundBy, devicePeaks, topShare, utilization, wastedUs } from "./op_tree";

// An H100 SXM's dense bf16 peak (~989 TFLOP/s) and HBM3 bandwidth (3.35 TB/s).
const peaks = { flopsPerSec: 989e12, hbmBytesPerSec: 3.35e12 };

describe("op profile tree", () => {
  it("reads the device's peaks and nothing else", () => {
    expect(devicePeaks({ device_peaks: { flops_per_sec: 989e12, hbm_bytes_per_sec: 3.35e12 } })).toEqual(peaks);
    expect(devicePeaks({})).toBeNull();
    expect(devicePeaks({ device_peaks: { flops_per_sec: 0, hbm_bytes_per_sec: 1 } })).toBeNull();
  });

  it("divides achieved rates by the peaks, preferring the backend's own utilisation", () => {
    // jax_mlp's by_category root: 7,368 GFLOP/s and 103 GB/s -> 0.745 % and 3.08 % of the peaks.
    const u = utilization({ flop_rate_gflops_per_sec: 7367.94, memory_bw_gbytes_per_sec: 103.24 }, peaks);
    expect(u.flops).toBeCloseTo(7367.94e9 / 989e12, 6);
    expect(u.hbm).toBeCloseTo(103.24e9 / 3.35e12, 6);
    expect(utilization({ flops_utilization: 0.5, memory_bw_gbytes_per_sec: 1 }, null)).toEqual({ flops: 0.5, hbm: null });
  });

  it("counts as wasted the time the best utilisation leaves unused", () => {
    expect(wastedUs({ total_time_us: 100 }, { flops: 0.25, hbm: 0.6 })).toBeCloseTo(40, 9);
    expect(wastedUs({ total_time_us: 100 }, { flops: null, hbm: null })).toBeNull();
  });

  it("keeps the children that make up 90 % of the time", () => {
    const kids = [5, 60, 30, 3, 2].map((t) => ({ t }));
    // 60 + 30 = 90 of 100: the third largest is not needed.
    expect(topShare(kids, (k) => k.t).map((k) => k.t)).toEqual([60, 30]);
    expect(topShare([{ t: 0 }], (k) => k.t)).toHaveLength(1);
    expect(topShare([{ t: 95 }, { t: 5 }], (k) => k.t).map((k) => k.t)).toEqual([95]);
  });

  it("says what bounds an op: the backend's word, else the roofline's ridge point", () => {
    // Ridge: 989e12 / 3.35e12 = 295 FLOP per byte. all-reduce.2.1: 1.0e9 FLOP over 2.7e9 bytes.
    expect(boundBy({ flops: 1006632960, bytes_accessed: 2684354560 }, peaks)).toBe("memory bandwidth");
    expect(boundBy({ flops: 1e12, bytes_accessed: 1e9 }, peaks)).toBe("compute");
    expect(boundBy({ flops: 1, bytes_accessed: 1, bound_by: "HBM" }, null)).toBe("HBM");
    expect(boundBy({ flops: 1, bytes_accessed: 1 }, null)).toBeNull();
  });
});
