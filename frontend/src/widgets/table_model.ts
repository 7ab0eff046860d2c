// The table widget's logic without the DOM: its view state (sort, filters, page), how that
// state reads from and writes to the URL ("t.<table>.sort", "t.<table>.desc",
// "t.<table>.page", "t.<table>.f.<column>"), the backend query it means, and cell text.

import { formatBytes, formatNumber, formatPercent, isByteUnit } from "../base/format";
import type { CellValue, TableColumn, TableQuery } from "../data/types";

export interface TableView {
  sort: string | null;
  /** null: the backend's default direction for `sort` (ascending for an explicit sort). */
  desc: boolean | null;
  filters: Readonly<Record<string, string>>;
  /** 0-based page index. */
  page: number;
}

export const DEFAULT_VIEW: TableView = { sort: null, desc: null, filters: {}, page: 0 };

export function isDefaultView(v: TableView): boolean {
  return v.sort === null && v.desc === null && v.page === 0 && Object.values(v.filters).every((f) => f === "");
}

/** Reads a table's view from its URL keys (prefix already removed: "sort", "f.name", ...). */
export function viewFromParams(params: ReadonlyMap<string, string>): TableView {
  const filters: Record<string, string> = {};
  for (const [k, v] of params) if (k.startsWith("f.") && v !== "") filters[k.slice(2)] = v;
  const desc = params.get("desc");
  const page = Number(params.get("page") ?? "0");
  return {
    sort: params.get("sort") ?? null,
    desc: desc === undefined ? null : desc === "1" || desc === "true",
    filters,
    page: Number.isInteger(page) && page > 0 ? page : 0,
  };
}

/** URL updates for `next`, deleting the keys of `prev` that no longer apply. */
export function viewToUpdates(prefix: string, prev: TableView, next: TableView): Record<string, string | null> {
  const out: Record<string, string | null> = {
    [`${prefix}sort`]: next.sort,
    [`${prefix}desc`]: next.desc === null ? null : next.desc ? "1" : "0",
    [`${prefix}page`]: next.page > 0 ? String(next.page) : null,
  };
  for (const col of Object.keys(prev.filters)) out[`${prefix}f.${col}`] = null;
  for (const [col, expr] of Object.entries(next.filters)) out[`${prefix}f.${col}`] = expr === "" ? null : expr;
  return out;
}

/**
 * Clicking a header: a new column sorts descending when numeric (largest first, as
 * profilers read) and ascending when text; the same column flips direction. Back to page 0.
 */
export function nextSort(view: TableView, column: TableColumn): TableView {
  if (view.sort === column.name) {
    const currentDesc = view.desc ?? false;
    return { ...view, desc: !currentDesc, page: 0 };
  }
  return { ...view, sort: column.name, desc: column.kind !== "str", page: 0 };
}

export function withFilter(view: TableView, column: string, expr: string): TableView {
  const filters = Object.fromEntries(Object.entries(view.filters).filter(([c]) => c !== column));
  if (expr.trim() !== "") filters[column] = expr;
  return { ...view, filters, page: 0 };
}

export function toQuery(view: TableView, pageSize: number): TableQuery {
  return {
    sort: view.sort,
    desc: view.desc,
    filters: { ...view.filters },
    offset: view.page * pageSize,
    limit: pageSize,
  };
}

export function pageCount(totalRows: number, pageSize: number): number {
  return Math.max(1, Math.ceil(totalRows / pageSize));
}

/** "Rows 101–200 of 1,234", "No rows", "1 row". */
export function rowRangeLabel(offset: number, shown: number, total: number): string {
  if (total === 0 || shown === 0) return total === 0 ? "No rows" : `No rows here (of ${formatNumber(total)})`;
  if (shown === total) return total === 1 ? "1 row" : `${formatNumber(total)} rows`;
  return `Rows ${formatNumber(offset + 1)}–${formatNumber(offset + shown)} of ${formatNumber(total)}`;
}

/** Header text: the label with its unit, unless cells carry the unit themselves (bytes). */
export function headerLabel(c: TableColumn): string {
  if (!c.unit || isByteUnit(c.unit)) return c.label;
  if (c.unit === "fraction" || c.unit === "ratio") return `${c.label} (%)`; // cells show fractions as percentages
  return `${c.label} (${c.unit === "us" ? "µs" : c.unit})`;
}

/** Cell text. Numbers stay in their column's unit (shown in the header) except bytes. */
export function cellText(value: CellValue, c: TableColumn): string {
  if (value === null) return "–";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "string") return value;
  if (isByteUnit(c.unit)) return formatBytes(value);
  if (c.unit === "%") return formatPercent(value).replace(/%$/, "");
  if (c.unit === "fraction" || c.unit === "ratio") return formatPercent(value * 100).replace(/%$/, "");
  if (c.kind === "int") return formatNumber(value);
  return formatNumber(value, 4);
}

export function filterPlaceholder(c: TableColumn): string {
  if (c.kind === "str") return "regex";
  if (c.kind === "bool") return "true/false";
  return ">=0";
}
