// Number formatting for cards, tables, axes and tooltips. DOM-free and locale-independent
// (a fixed "," grouping and "." decimal point), so screenshots, tests and CSV agree everywhere.

/** Time units the backend uses in column units and key suffixes, in picoseconds. */
export const PS_PER_UNIT: Readonly<Record<string, number>> = {
  ps: 1,
  ns: 1e3,
  us: 1e6,
  "µs": 1e6,
  ms: 1e9,
  s: 1e12,
};

const TIME_STEPS: readonly [number, string][] = [
  [1e12, "s"],
  [1e9, "ms"],
  [1e6, "µs"],
  [1e3, "ns"],
  [1, "ps"],
];

/** Groups the integer part with commas: 1234567.5 -> "1,234,567.5". */
export function groupDigits(text: string): string {
  const negative = text.startsWith("-");
  const body = negative ? text.slice(1) : text;
  const dot = body.indexOf(".");
  const intPart = dot < 0 ? body : body.slice(0, dot);
  const frac = dot < 0 ? "" : body.slice(dot);
  const grouped = intPart.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return (negative ? "-" : "") + grouped + frac;
}

/**
 * A number for humans: integers exactly (grouped), other values with `digits` significant
 * digits but never in exponent form below 1e21, trailing zeros dropped.
 */
export function formatNumber(value: number, digits = 4): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? "–" : value > 0 ? "∞" : "-∞";
  if (Number.isInteger(value) && Math.abs(value) < 1e21) return groupDigits(value.toFixed(0));
  const abs = Math.abs(value);
  if (abs >= 1e21 || abs < 1e-6) return value.toExponential(Math.max(0, digits - 1));
  // Decimals so that `digits` significant digits show, at most 6, at least 0.
  const magnitude = Math.floor(Math.log10(abs));
  const decimals = Math.min(6, Math.max(0, digits - 1 - magnitude));
  const fixed = value.toFixed(decimals);
  const trimmed = fixed.includes(".") ? fixed.replace(/\.?0+$/, "") : fixed;
  return groupDigits(trimmed === "-0" ? "0" : trimmed);
}

/** A duration given in picoseconds, in the largest unit that keeps it >= 1: "12.35 ms". */
export function formatDurationPs(ps: number, digits = 4): string {
  if (!Number.isFinite(ps)) return "–";
  if (ps === 0) return "0";
  const abs = Math.abs(ps);
  for (const [scale, unit] of TIME_STEPS) {
    if (abs >= scale || scale === 1) return `${formatNumber(ps / scale, digits)} ${unit}`;
  }
  return `${formatNumber(ps, digits)} ps`;
}

/** A duration in any unit of PS_PER_UNIT ("us", "ms", ...), rescaled for reading. */
export function formatDuration(value: number, unit: string, digits = 4): string {
  const scale = PS_PER_UNIT[unit];
  if (scale === undefined) throw new Error(`unknown time unit ${unit}`);
  return formatDurationPs(value * scale, digits);
}

const BYTE_STEPS: readonly [number, string][] = [
  [2 ** 40, "TiB"],
  [2 ** 30, "GiB"],
  [2 ** 20, "MiB"],
  [2 ** 10, "KiB"],
];

/** Bytes in binary units (as XProf's memory pages): 1536 -> "1.5 KiB", 12 -> "12 B". */
export function formatBytes(bytes: number, digits = 4): string {
  if (!Number.isFinite(bytes)) return "–";
  const abs = Math.abs(bytes);
  for (const [scale, unit] of BYTE_STEPS) {
    if (abs >= scale) return `${formatNumber(bytes / scale, digits)} ${unit}`;
  }
  return `${formatNumber(bytes, digits)} B`;
}

/** Bytes per second in GiB/s, the unit XProf shows bandwidths in and every page uses: "12.5 GiB/s". */
export function formatBandwidth(bytesPerSec: number, digits = 4): string {
  if (!Number.isFinite(bytesPerSec)) return "–";
  return `${formatNumber(bytesPerSec / 2 ** 30, digits)} GiB/s`;
}

/** A value already in percent (0..100): 12.345 -> "12.3%". */
export function formatPercent(percent: number, decimals = 1): string {
  if (!Number.isFinite(percent)) return "–";
  const fixed = percent.toFixed(decimals);
  // -0.01 rounds to "-0.0": a sign on zero only confuses.
  return `${/^-0(\.0*)?$/.test(fixed) ? fixed.slice(1) : fixed}%`;
}

/** A ratio (0..1) shown as a percentage: 0.1234 -> "12.3%". */
export function formatRatio(ratio: number, decimals = 1): string {
  return formatPercent(ratio * 100, decimals);
}

const BYTE_UNITS: Readonly<Record<string, number>> = {
  B: 1,
  bytes: 1,
  byte: 1,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
};

export function isTimeUnit(unit: string): boolean {
  return unit in PS_PER_UNIT;
}

export function isByteUnit(unit: string): boolean {
  return unit in BYTE_UNITS;
}

/**
 * A value with the unit a column or field declares. Times and bytes are rescaled to a
 * readable unit; "%" is a percentage; other units are appended ("12.5 GFLOP/s").
 */
export function formatWithUnit(value: number, unit: string): string {
  if (isTimeUnit(unit)) return formatDuration(value, unit);
  const bytesScale = BYTE_UNITS[unit];
  if (bytesScale !== undefined) return formatBytes(value * bytesScale);
  if (unit === "%") return formatPercent(value);
  if (unit === "ratio" || unit === "fraction") return formatRatio(value);
  // Decimal GB/s (HTA's counters) read in the one bandwidth unit of the dashboard.
  if (unit === "GB/s") return formatBandwidth(value * 1e9);
  return unit ? `${formatNumber(value)} ${unit}` : formatNumber(value);
}

/**
 * The unit a field name carries by the project's naming rule (`dur_ps`, `step_time_ms`,
 * `size_bytes`, `idle_percent`): "" when the name says nothing.
 */
export function unitFromKey(key: string): string {
  const m = /_(ps|ns|us|ms|s|bytes|percent|pct|ratio|fraction)$/.exec(key);
  if (!m || m[1] === undefined) return "";
  const suffix = m[1];
  if (suffix === "percent" || suffix === "pct") return "%";
  return suffix;
}

/** A field value formatted by what its name says (see unitFromKey). */
export function formatByKey(key: string, value: unknown): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") return formatWithUnit(value, unitFromKey(key));
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map((v) => formatByKey("", v)).join(", ");
  return JSON.stringify(value);
}

/** "step_time_ms" -> "Step time", "tf_op_count" -> "TF op count" (unit suffix dropped). */
export function humanizeKey(key: string): string {
  const unit = unitFromKey(key);
  const stem = unit ? key.replace(/_[a-z]+$/, "") : key;
  const words = stem.split(/[_\s]+/).filter((w) => w.length > 0);
  const acronyms = new Set(["tf", "xla", "gpu", "tpu", "cpu", "hlo", "id", "io", "jax", "csv"]);
  const out = words.map((w, i) => {
    if (acronyms.has(w)) return w.toUpperCase();
    return i === 0 ? w.charAt(0).toUpperCase() + w.slice(1) : w;
  });
  return out.join(" ");
}

/** A Unix time in seconds as local "YYYY-MM-DD HH:MM". */
export function formatTimestamp(unixSeconds: number): string {
  if (!Number.isFinite(unixSeconds) || unixSeconds <= 0) return "";
  const d = new Date(unixSeconds * 1000);
  const pad = (n: number): string => String(n).padStart(2, "0");
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}`
  );
}
