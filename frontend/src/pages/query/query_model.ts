// The Query page's logic, free of the DOM: the example queries of a run's kind, the answer of
// the `sql` route decoded, its rows sorted/filtered/paged in the browser (an answer is at most
// 10,000 rows, all of them here), the chart's series, and a row's link to its event in the
// trace viewer.

import { serializeState } from "../../base/url_state";
import type { CellValue, ColumnKind, TableColumn, TableData, TableQuery } from "../../data/types";

export interface Example {
  title: string;
  sql: string;
}

// Each ORDER BY ends in columns that make the order total: DuckDB orders ties differently from one
// run to the next (its threads), and an example must answer the same rows every time.
const COMMON: Example[] = [
  {
    title: "Longest events, each linked to the trace viewer",
    sql: "SELECT host, plane_index, event_id, device, line_name, name, dur_ps / 1e6 AS dur_us, start_ps, dur_ps\nFROM events\nORDER BY dur_ps DESC, host, plane_index, event_id\nLIMIT 100",
  },
  {
    title: "Events and time per device and category",
    sql: "SELECT host, device, category, count(*) AS events, sum(dur_ps) / 1e9 AS total_ms\nFROM events\nGROUP BY ALL\nORDER BY host, device, category",
  },
  {
    title: "Step times (the overview's steps table)",
    sql: "SELECT step_num, host, step_time_ms\nFROM steps\nORDER BY host, step_num",
  },
];

const BY_KIND: Record<string, Example[]> = {
  xspace: [
    {
      title: "Top HLO ops by self time (XProf's Events DB example)",
      sql: "SELECT hlo_op, count(*) AS n, sum(self_time_ns) / 1e3 AS self_us\nFROM events\nWHERE hlo_op IS NOT NULL AND category <> 'host'\nGROUP BY hlo_op\nORDER BY self_us DESC, hlo_op\nLIMIT 20",
    },
    {
      title: "p50 / p99 of each GPU kernel",
      sql: "SELECT name, count(*) AS n,\n  quantile_cont(dur_ps / 1e6, 0.5) AS p50_us,\n  quantile_cont(dur_ps / 1e6, 0.99) AS p99_us\nFROM events\nWHERE category = 'device'\nGROUP BY name\nORDER BY p99_us DESC, name\nLIMIT 20",
    },
    {
      title: "Device time per step (XProf's step column)",
      sql: "SELECT step, device, count(*) AS events, (max(end_ns) - min(start_ns)) / 1e6 AS span_ms\nFROM events\nWHERE step IS NOT NULL AND category <> 'host'\nGROUP BY step, device\nORDER BY min(start_ns), device",
    },
  ],
  pytorch: [
    {
      title: "Kernel time per rank and kernel",
      sql: "SELECT host AS rank, name, count(*) AS n, sum(dur_ps) / 1e6 AS total_us\nFROM events\nWHERE cat = 'kernel'\nGROUP BY ALL\nORDER BY total_us DESC, rank, name\nLIMIT 50",
    },
    {
      title: "NCCL kernels longer than 1 ms",
      sql: "SELECT host, plane_index, event_id, name, dur_ps / 1e9 AS dur_ms, step_num\nFROM events\nWHERE cat = 'kernel' AND name ILIKE '%nccl%' AND dur_ps > 1e9\nORDER BY dur_ps DESC, host, plane_index, event_id",
    },
    {
      title: "p99 of each kernel per rank",
      sql: "SELECT name, host,\n  quantile_cont(dur_ps / 1e6, 0.99) AS p99_us, count(*) AS n\nFROM events\nWHERE cat = 'kernel'\nGROUP BY ALL\nORDER BY p99_us DESC, name, host\nLIMIT 50",
    },
    {
      title: "Operators that launched the most kernel time",
      sql: "SELECT op.name AS operator, count(*) AS kernels, sum(k.dur_ps) / 1e6 AS kernel_us\nFROM events k\nJOIN events rt ON rt.host = k.host AND rt.correlation_id = k.correlation_id AND rt.cat = 'cuda_runtime'\nJOIN events op ON op.host = rt.host AND op.external_id = rt.external_id AND op.cat = 'cpu_op'\nWHERE k.cat = 'kernel'\nGROUP BY operator\nORDER BY kernel_us DESC, operator\nLIMIT 20",
    },
  ],
};

/** The examples offered for a run of `kind` (its own first, then those of every kind). */
export function examplesFor(kind: string): Example[] {
  return [...(BY_KIND[kind] ?? []), ...COMMON];
}

export interface SqlColumn {
  name: string;
  type: string;
}

export interface SqlAnswer {
  columns: SqlColumn[];
  rows: CellValue[][];
  rowCount: number;
  truncated: boolean;
  elapsedMs: number;
}

function cell(v: unknown): CellValue {
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  return JSON.stringify(v); // lists, structs and maps: shown as their JSON text
}

/** The `sql` route's answer, checked. */
export function decodeSqlAnswer(raw: unknown): SqlAnswer {
  const o = raw as Record<string, unknown> | null;
  if (!o || !Array.isArray(o.columns) || !Array.isArray(o.rows)) throw new Error("the sql answer has no columns or rows");
  const columns = (o.columns as unknown[]).map((c, i) => {
    const col = c as Record<string, unknown> | null;
    if (!col || typeof col.name !== "string" || typeof col.type !== "string") throw new Error(`bad column ${i}`);
    return { name: col.name, type: col.type };
  });
  const rows = (o.rows as unknown[]).map((r) => (Array.isArray(r) ? r.map(cell) : []));
  return {
    columns,
    rows,
    rowCount: typeof o.row_count === "number" ? o.row_count : rows.length,
    truncated: o.truncated === true,
    elapsedMs: typeof o.elapsed_ms === "number" ? o.elapsed_ms : 0,
  };
}

const INT_TYPES = /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|U?HUGEINT)$/;
const FLOAT_TYPES = /^(DOUBLE|FLOAT|REAL|DECIMAL.*)$/;

export function columnKind(type: string): ColumnKind {
  if (INT_TYPES.test(type)) return "int";
  if (FLOAT_TYPES.test(type)) return "float";
  if (type === "BOOLEAN") return "bool";
  return "str";
}

/** A time column's unit from its name (dur_ps, total_us, span_ms): the table shows it. */
function unitOf(name: string): string {
  const m = /_(ps|ns|us|ms|s|bytes|percent|pct)$/.exec(name);
  return m?.[1] ?? "";
}

export function tableColumns(columns: readonly SqlColumn[]): TableColumn[] {
  return columns.map((c) => ({ name: c.name, label: c.name, kind: columnKind(c.type), unit: unitOf(c.name), description: c.type }));
}

const COMPARISON = /^\s*(<=|>=|!=|<|>|=)?\s*(-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?)\s*$/i;

/** Whether a value passes a column's filter: a comparison (">=10") on numbers, else a
 * case-insensitive regular expression on the text (an invalid one matches nothing). */
export function passes(value: CellValue, kind: ColumnKind, expr: string): boolean {
  if (!expr.trim()) return true;
  const cmp = kind === "int" || kind === "float" ? COMPARISON.exec(expr) : null;
  if (cmp) {
    if (typeof value !== "number") return false;
    const bound = Number(cmp[2]);
    switch (cmp[1] ?? "=") {
      case "<": return value < bound;
      case "<=": return value <= bound;
      case ">": return value > bound;
      case ">=": return value >= bound;
      case "!=": return value !== bound;
      default: return value === bound;
    }
  }
  let re: RegExp;
  try {
    re = new RegExp(expr, "i");
  } catch {
    return false;
  }
  return re.test(value === null ? "" : String(value));
}

function compare(a: CellValue, b: CellValue): number {
  if (a === b) return 0;
  if (a === null) return 1; // nulls last either way
  if (b === null) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a) < String(b) ? -1 : 1;
}

/** One page of the answer's rows under a table query (sort, filters, offset/limit). */
export function queryRows(columns: readonly TableColumn[], rows: readonly CellValue[][], q: TableQuery): TableData {
  let kept = rows.filter((row) =>
    Object.entries(q.filters).every(([name, expr]) => {
      const i = columns.findIndex((c) => c.name === name);
      const col = columns[i];
      return i < 0 || col === undefined || passes(row[i] ?? null, col.kind, expr);
    }),
  );
  const s = q.sort === null ? -1 : columns.findIndex((c) => c.name === q.sort);
  if (s >= 0) {
    const sign = q.desc ? -1 : 1;
    kept = [...kept].sort((a, b) => {
      const x = a[s] ?? null;
      const y = b[s] ?? null;
      if (x === null || y === null) return compare(x, y);
      return sign * compare(x, y);
    });
  }
  const end = q.limit === null ? kept.length : q.offset + q.limit;
  return { columns: [...columns], rows: kept.slice(q.offset, end), totalRows: kept.length, offset: q.offset, meta: {} };
}

/** The chart of a numeric column over the first column: x labels and the y values
 * (non-numbers skipped); null when the answer has no numeric column but the first. */
export function chartSeries(columns: readonly TableColumn[], rows: readonly CellValue[][], y: string | null,
  maxPoints = 2000): { x: string; y: string; xs: (string | number)[]; ys: number[]; numericX: boolean } | null {
  const first = columns[0];
  if (!first) return null;
  const candidates = columns.slice(1).filter((c) => c.kind === "int" || c.kind === "float");
  const yCol = candidates.find((c) => c.name === y) ?? candidates[0];
  if (!yCol) return null;
  const yi = columns.indexOf(yCol);
  const numericX = first.kind === "int" || first.kind === "float";
  // A bar's label: the row's leading text columns (the GROUP BY keys, "rank · name"), so bars of
  // one rank and different names read different.
  let keys = 1;
  while (!numericX && keys < yi && columns[keys]?.kind === "str") keys++;
  const xs: (string | number)[] = [];
  const ys: number[] = [];
  for (const row of rows.slice(0, maxPoints)) {
    const v = row[yi];
    if (typeof v !== "number") continue;
    const xv = row[0] ?? null;
    xs.push(numericX && typeof xv === "number" ? xv : row.slice(0, keys).map((c) => String(c ?? null)).join(" · "));
    ys.push(v);
  }
  return { x: columns.slice(0, keys).map((c) => c.name).join(" · "), y: yCol.name, xs, ys, numericX };
}

/** The numeric columns a chart may show (every one but the first). */
export function chartable(columns: readonly TableColumn[]): string[] {
  return columns.slice(1).filter((c) => c.kind === "int" || c.kind === "float").map((c) => c.name);
}

export interface EventRef {
  host: string;
  plane: number;
  row: number;
  startPs: number | null;
  durPs: number | null;
}

/** The event a row names, when it has host, plane_index and event_id (start_ps/dur_ps: a window). */
export function eventOf(columns: readonly TableColumn[], row: readonly CellValue[]): EventRef | null {
  const at = (name: string): CellValue => {
    const i = columns.findIndex((c) => c.name === name);
    return i < 0 ? null : (row[i] ?? null);
  };
  const host = at("host");
  const plane = at("plane_index");
  const ev = at("event_id");
  if (typeof host !== "string" || typeof plane !== "number" || typeof ev !== "number") return null;
  const start = at("start_ps");
  const dur = at("dur_ps");
  return { host, plane, row: ev, startPs: typeof start === "number" ? start : null, durPs: typeof dur === "number" ? dur : null };
}

/** A hash link to the event in the trace viewer of `run`, the window around it when known. */
export function eventHref(run: string, e: EventRef): string {
  const state = new Map<string, string>([
    ["run", run],
    ["host", e.host],
    ["tool", "trace_viewer"],
    ["c.sel", `${e.plane}:${e.row}`],
  ]);
  if (e.startPs !== null && e.durPs !== null) {
    const pad = Math.max(e.durPs, 1000);
    state.set("c.start", String(Math.max(0, e.startPs - pad)));
    state.set("c.end", String(e.startPs + e.durPs + pad));
  }
  return `#${serializeState(state)}`;
}
