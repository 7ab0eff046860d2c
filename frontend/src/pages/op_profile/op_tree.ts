// What the op profile tree shows of each node, computed from the backend's node fields
// (DOM-free, vitest): utilisation against the device's peaks, the time that utilisation
// leaves unused ("wasted"), and the "top 90 %" cut that lists only the children that make up
// 90 % of their parent's time (issue 19: closer to what users use XProf's op profile for).

import { num, type Obj, obj } from "../fields";

export interface DevicePeaks {
  flopsPerSec: number;
  hbmBytesPerSec: number;
}

/**
 * The device's peaks, from the result's `device_peaks` ({flops_per_sec, hbm_bytes_per_sec});
 * null when the backend sends none (then there is no utilisation to show).
 */
export function devicePeaks(raw: Obj): DevicePeaks | null {
  const p = obj(raw, "device_peaks");
  const flops = num(p, "flops_per_sec");
  const hbm = num(p, "hbm_bytes_per_sec");
  return flops !== null && hbm !== null && flops > 0 && hbm > 0 ? { flopsPerSec: flops, hbmBytesPerSec: hbm } : null;
}

export interface Utilization {
  /** Achieved FLOP/s over the peak, 0..1 (null: the op has no FLOP count). */
  flops: number | null;
  /** Achieved HBM bandwidth over the peak, 0..1. */
  hbm: number | null;
}

/** A node's utilisation: the backend's own fields when it sends them, else rate / peak. */
export function utilization(node: Obj, peaks: DevicePeaks | null): Utilization {
  const own = (key: string): number | null => num(node, key);
  const rate = (key: string, scale: number, peak: number | undefined): number | null => {
    const v = num(node, key);
    return v === null || peak === undefined ? null : Math.min(1, (v * scale) / peak);
  };
  return {
    flops: own("flops_utilization") ?? rate("flop_rate_gflops_per_sec", 1e9, peaks?.flopsPerSec),
    hbm: own("hbm_bw_utilization") ?? rate("memory_bw_gbytes_per_sec", 1e9, peaks?.hbmBytesPerSec),
  };
}

/**
 * Time the node leaves unused: its time × (1 − its best utilisation), the op keeping the
 * device furthest from either roof. Null without utilisation.
 */
export function wastedUs(node: Obj, u: Utilization): number | null {
  const best = Math.max(u.flops ?? -1, u.hbm ?? -1);
  if (best < 0) return null;
  return (num(node, "total_time_us") ?? 0) * (1 - best);
}

/** The children that make up `share` of the summed time, largest first (never none). */
export function topShare<T>(children: readonly T[], timeOf: (c: T) => number, share = 0.9): T[] {
  const total = children.reduce((a, c) => a + Math.max(0, timeOf(c)), 0);
  if (total <= 0) return [...children];
  const sorted = [...children].sort((a, b) => timeOf(b) - timeOf(a));
  const out: T[] = [];
  let sum = 0;
  for (const c of sorted) {
    if (out.length > 0 && sum >= share * total) break;
    out.push(c);
    sum += Math.max(0, timeOf(c));
  }
  return out;
}

/**
 * What limits an op: the backend's `bound_by` when it sends one, else the roofline's answer:
 * an op whose FLOPs per byte are below the device's ridge point (peak FLOP/s / peak bytes/s)
 * is memory-bound, above it compute-bound. Null without FLOPs, bytes or peaks.
 */
export function boundBy(node: Obj, peaks: DevicePeaks | null): string | null {
  const own = node.bound_by;
  if (typeof own === "string" && own) return own;
  const flops = num(node, "flops") ?? 0;
  const bytes = num(node, "bytes_accessed") ?? 0;
  if (peaks === null || flops <= 0 || bytes <= 0) return null;
  return flops / bytes < peaks.flopsPerSec / peaks.hbmBytesPerSec ? "memory bandwidth" : "compute";
}
