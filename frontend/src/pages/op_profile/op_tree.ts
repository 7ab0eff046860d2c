// What the op profile tree shows of each node, from the backend's node fields (DOM-free,
// vitest): utilisation against the device's peaks, the time that utilisation leaves unused
// ("wasted"), and what bounds an op: what users open XProf's op profile for.
// The "top 90 %" cut and the order by wasted time are the backend's options (top_percent,
// order_by=time_wasted).

import type { OpNode, OpPeaks } from "../../data/schema.gen";

/** The node fields read here: an OpNode's (unit tests build only the ones they test). */
export type NodeFields = Partial<Pick<OpNode, "flops_utilization" | "hbm_bw_utilization" | "flop_rate_gflops_per_sec"
  | "memory_bw_gbytes_per_sec" | "time_wasted_fraction" | "total_time_us" | "flops" | "bytes_accessed">>;

export interface DevicePeaks {
  flopsPerSec: number;
  hbmBytesPerSec: number;
}

/**
 * The device's peaks, from the result's `peaks` ({flop_rate_gflops_per_sec,
 * hbm_bw_gbytes_per_sec}, 0 when unknown); null when they are unknown.
 */
export function devicePeaks(raw: { peaks?: OpPeaks }): DevicePeaks | null {
  const flops = raw.peaks?.flop_rate_gflops_per_sec ?? null;
  const hbm = raw.peaks?.hbm_bw_gbytes_per_sec ?? null;
  return flops !== null && hbm !== null && flops > 0 && hbm > 0 ? { flopsPerSec: flops * 1e9, hbmBytesPerSec: hbm * 1e9 } : null;
}

export interface Utilization {
  /** Achieved FLOP/s over the peak, 0..1 (null: the op has no FLOP count). */
  flops: number | null;
  /** Achieved HBM bandwidth over the peak, 0..1. */
  hbm: number | null;
}

/** A node's utilisation: the backend's own fields when it sends them, else rate / peak. */
export function utilization(node: NodeFields, peaks: DevicePeaks | null): Utilization {
  const rate = (v: number | undefined, scale: number, peak: number | undefined): number | null =>
    v === undefined || peak === undefined ? null : Math.min(1, (v * scale) / peak);
  return {
    flops: node.flops_utilization ?? rate(node.flop_rate_gflops_per_sec, 1e9, peaks?.flopsPerSec),
    hbm: node.hbm_bw_utilization ?? rate(node.memory_bw_gbytes_per_sec, 1e9, peaks?.hbmBytesPerSec),
  };
}

/**
 * Time the node leaves unused: the backend's `time_wasted_fraction` (of the root's time) times
 * the root's time; else its own time × (1 − its best utilisation). Null without utilisation.
 */
export function wastedUs(node: NodeFields, u: Utilization, rootUs: number): number | null {
  // Above the peak the counts are estimates that overcount (a custom-call's FLOPs): the time it
  // "wastes" would be negative, which means nothing (XProf caps the utilisation at 100 %).
  if (overPeak(u)) return null;
  const fraction = node.time_wasted_fraction ?? null;
  if (fraction !== null) return Math.max(0, fraction) * rootUs;
  const best = Math.max(u.flops ?? -1, u.hbm ?? -1);
  if (best < 0) return null;
  return (node.total_time_us ?? 0) * (1 - best);
}

/** Whether a utilisation is above the device's peak: its FLOP or byte count cannot be right. */
export function overPeak(u: Utilization): boolean {
  return (u.flops ?? 0) > 1 || (u.hbm ?? 0) > 1;
}

/** A utilisation as the page prints it: capped at "> 100%" (the count overcounts), "–" unknown. */
export function utilText(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return "–";
  if (v > 1) return "> 100%";
  const fixed = (v * 100).toFixed(1);
  return `${fixed === "-0.0" ? "0.0" : fixed}%`;
}

export const OVER_PEAK_NOTE =
  "Above the device's peak: the op's FLOP or byte count is an estimate that overcounts (for example a custom-call's cost model), so its utilisation and wasted time are not meaningful.";

/**
 * What limits an op, the roofline's answer: an op whose FLOPs per byte are below the device's
 * ridge point (peak FLOP/s / peak bytes/s) is memory-bound, above it compute-bound. Null
 * without FLOPs, bytes or peaks.
 */
export function boundBy(node: NodeFields, peaks: DevicePeaks | null): string | null {
  const flops = node.flops ?? 0;
  const bytes = node.bytes_accessed ?? 0;
  if (peaks === null || flops <= 0 || bytes <= 0) return null;
  return flops / bytes < peaks.flopsPerSec / peaks.hbmBytesPerSec ? "memory bandwidth" : "compute";
}
