// The roofline chart's log axes: whole decades around the data (not ECharts' automatic
// 1e-10…1e10 span, nor a bound like 6,522.29 that labels every tick oddly), labelled "0.01",
// "1,000" or "1e7". DOM-free.

import { formatNumber } from "../../base/format";

/** Decades outside this range read better as powers of ten ("1e7") than as digits. */
const PLAIN_MIN = 1e-3;
const PLAIN_MAX = 1e6;

/**
 * The smallest and largest power of ten that enclose every positive finite value; [1, 10] when
 * there is none, one decade when all values sit on the same power.
 */
export function decadeBounds(values: readonly number[]): [number, number] {
  const ok = values.filter((v) => Number.isFinite(v) && v > 0);
  if (ok.length === 0) return [1, 10];
  let lo = Math.floor(Math.log10(Math.min(...ok)));
  let hi = Math.ceil(Math.log10(Math.max(...ok)));
  if (hi <= lo) hi = lo + 1;
  // Float noise: log10(1000) may come out as 2.9999999999999996.
  lo = Math.round(lo);
  hi = Math.round(hi);
  return [10 ** lo, 10 ** hi];
}

/** A tick label of a log axis: "0.01", "1", "1,000", "1e7", "1e-5". */
export function decadeLabel(value: number, powers = false): string {
  if (!(value > 0) || !Number.isFinite(value)) return "";
  const exp = Math.round(Math.log10(value));
  const isDecade = Math.abs(value / 10 ** exp - 1) < 1e-9;
  if (!powers && value >= PLAIN_MIN && value <= PLAIN_MAX) return formatNumber(isDecade ? 10 ** exp : value, 3);
  return isDecade ? `1e${String(exp)}` : value.toExponential(1).replace("e+", "e");
}

/**
 * The label formatter of an axis from `lo` to `hi`: digits when the whole axis reads well in
 * digits, otherwise powers of ten on every tick (one axis never mixes "1,000,000" and "1e7").
 */
export function decadeFormatter(lo: number, hi: number): (value: number) => string {
  const powers = lo < PLAIN_MIN || hi > PLAIN_MAX;
  return (value: number) => decadeLabel(value, powers);
}
