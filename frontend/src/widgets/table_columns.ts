// Which columns a table shows, in which order, and which stay put when it scrolls sideways
// (a table as wide as kernel stats is more than twice the page's width: its names must stay).
// DOM-free: the widget asks for a display order and a count of sticky leading columns.
//
// - Key columns first (opt-in per table): identity columns (rank, host), the name, then
//   occurrences, total time, total %, self time, self % — the columns a profile is read by —
//   then every other column in the backend's order.
// - The leading columns through the name column (or the first column) stay visible when
//   scrolling right.
// - Columns the user hides are kept in the URL (`t.<table>.hide=a,b`); the name never hides.

import type { TableColumn } from "../data/types";

/** Names of the column that says what a row is, best first. */
const NAME_COLUMNS = ["kernel_name", "operation", "operator", "op_name", "name", "op", "node", "type"];
/** Columns that say which of several sources a row is from; they stay in front of the name. */
const IDENTITY_COLUMNS = new Set(["rank", "host"]);

/** Key measures, in the order they follow the name. Cumulative columns are never key columns. */
const KEY_PATTERNS: readonly RegExp[] = [
  /^(occurrences|calls|count|occurrence_count)$/,
  /^(total_(time|duration)(_us|_ms|_ps)?|(host|device)_total_us|total_us)$/,
  /^total_(time_)?(percent|fraction)$/,
  /^(total_self_time_us|self_time_us|self_us|(host|device)_self_us)$/,
  /^((device|host)_)?self_time_(percent|fraction)$/,
];

/** Index of the name column, or -1. */
export function nameColumnIndex(columns: readonly TableColumn[]): number {
  for (const name of NAME_COLUMNS) {
    const i = columns.findIndex((c) => c.name === name && c.kind === "str");
    if (i >= 0) return i;
  }
  return -1;
}

/** The display order with the key columns first (indices into `columns`). */
export function keyFirstOrder(columns: readonly TableColumn[]): number[] {
  const name = nameColumnIndex(columns);
  if (name < 0) return columns.map((_, i) => i);
  const front: number[] = [];
  for (let i = 0; i < name; i++) if (IDENTITY_COLUMNS.has(columns[i]?.name ?? "")) front.push(i);
  front.push(name);
  for (const pattern of KEY_PATTERNS) {
    columns.forEach((c, i) => {
      if (!front.includes(i) && pattern.test(c.name)) front.push(i);
    });
  }
  return [...front, ...columns.map((_, i) => i).filter((i) => !front.includes(i))];
}

/** The columns shown, in order: `order` without the hidden ones (the name column always shows). */
export function shownOrder(columns: readonly TableColumn[], order: readonly number[], hidden: readonly string[]): number[] {
  const name = nameColumnIndex(columns);
  const hide = new Set(hidden);
  const shown = order.filter((i) => i === name || !hide.has(columns[i]?.name ?? ""));
  return shown.length > 0 ? shown : [...order];
}

/** At most this many columns stay put (the name and up to three before it). */
const MAX_STICKY = 4;

/**
 * How many leading shown columns stay when scrolling sideways: those through the name column
 * when it is among the first four, else the first column (the row's key: a step, a time).
 */
export function stickyCount(columns: readonly TableColumn[], shown: readonly number[]): number {
  const at = shown.indexOf(nameColumnIndex(columns));
  if (at >= 0 && at < MAX_STICKY) return at + 1;
  return shown.length > 0 ? 1 : 0;
}

/** `t.<table>.hide` as a list of column names. */
export function hiddenFromParam(value: string | null | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter(Boolean);
}

export function hiddenToParam(hidden: readonly string[]): string | null {
  return hidden.length > 0 ? [...new Set(hidden)].join(",") : null;
}
